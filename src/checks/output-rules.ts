import { ApiObject, Chart } from 'cdk8s';
import { IConstruct } from 'constructs';
import { numberLikeErrors } from './number-like';
import { duplicateOf } from './unique-objects';

/**
 * A rule over the final JSON of each object the library makes, registered by a construct for its
 * whole app (the rotating-Secret env rule). It runs when cdk8s synthesizes the object, on the JSON
 * cdk8s resolved and patched: once per object and synth, nothing synthesized twice, no tree walk.
 */
export type OutputRule = (obj: ApiObject, json: any) => string[];

const RULES = new WeakMap<IConstruct, Map<string, OutputRule>>();

/** Registers, once per app and key, a rule every object of the library obeys at synth. */
export function addOutputRule(scope: IConstruct, key: string, rule: OutputRule): void {
  const root = scope.node.root;
  let rules = RULES.get(root);
  if (!rules) RULES.set(root, (rules = new Map()));
  if (!rules.has(key)) rules.set(key, rule);
}

/**
 * What is wrong with one of the library's objects as synthesized: a name another object of the
 * app also has, a string kubectl would read back as a number, and the registered rules.
 */
export function outputErrors(obj: ApiObject, json: any): string[] {
  const errors: string[] = [];
  const other = duplicateOf(obj);
  if (other) errors.push(other);
  for (const e of numberLikeErrors(json)) errors.push(`${ownerOf(obj)}: ${obj.kind}/${obj.name} ${e}`);
  for (const rule of RULES.get(obj.node.root)?.values() ?? []) errors.push(...rule(obj, json));
  return errors;
}

/** The construct that made an object, as the library's messages name it: `<Construct> '<id>'`. */
export function ownerOf(obj: ApiObject): string {
  const parent = obj.node.scope;
  const maker = parent && parent.node.scope && !Chart.isChart(parent) && !(parent instanceof ApiObject) ? parent : obj;
  return `${maker.constructor.name} '${maker.node.id}'`;
}
