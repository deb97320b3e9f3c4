import { IConstruct } from 'constructs';

interface Memo {
  size: number;
  errors: string[];
}

const REGISTERED = new WeakMap<IConstruct, Map<string, Memo | undefined>>();

/**
 * Registers, once per app and key, a synth-time check over the whole app. cdk8s validates the
 * whole app again for every chart it writes, so the check's result is kept while the app's
 * construct tree keeps its size: an app of many charts pays for it once, not once per chart.
 */
export function addAppCheck(scope: IConstruct, key: string, check: (root: IConstruct) => string[]): void {
  const root = scope.node.root;
  let checks = REGISTERED.get(root);
  if (!checks) REGISTERED.set(root, checks = new Map());
  if (checks.has(key)) return;
  checks.set(key, undefined);
  root.node.addValidation({
    validate: () => {
      const size = root.node.findAll().length;
      const memo = checks!.get(key);
      if (memo && memo.size === size) return memo.errors;
      const errors = check(root);
      checks!.set(key, { size, errors });
      return errors;
    },
  });
}
