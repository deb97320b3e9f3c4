import { IConstruct } from 'constructs';

/** The app-wide checks of one app, and the tree walk they share. */
interface AppChecks {
  readonly checks: Map<string, AppCheck>;
  /** The latest walk of the whole tree that no check has used yet (see `walkOf`). */
  fresh?: IConstruct[];
  /** Whether the end of the current task will drop `fresh`. */
  expiring?: boolean;
}

interface AppCheck {
  readonly run: (root: IConstruct, nodes: readonly IConstruct[]) => string[];
  memo?: { nodes: readonly IConstruct[]; errors: string[] };
}

const APPS = new WeakMap<IConstruct, AppChecks>();

/**
 * Registers, once per app and key, a synth-time check over the whole app. cdk8s validates the
 * whole app again for every chart it writes (cdk8s-team/cdk8s-core#1658), so a check that walked
 * the tree on every pass made an app of one chart per workload quadratic twice over. The check
 * gets the pass's own walk of the tree and its result is kept while that walk holds the same
 * constructs: an app of many charts pays for it once, not once per chart.
 */
export function addAppCheck(scope: IConstruct, key: string, check: (root: IConstruct, nodes: readonly IConstruct[]) => string[]): void {
  const root = scope.node.root;
  let app = APPS.get(root);
  if (!app) {
    APPS.set(root, app = { checks: new Map() });
    shareWalks(root, app);
    const state = app;
    root.node.addValidation({ validate: () => runChecks(root, state) });
  }
  if (!app.checks.has(key)) app.checks.set(key, { run: check });
}

function runChecks(root: IConstruct, app: AppChecks): string[] {
  const nodes = walkOf(root, app);
  const errors: string[] = [];
  for (const c of app.checks.values()) {
    if (!c.memo || !sameConstructs(c.memo.nodes, nodes)) c.memo = { nodes, errors: c.run(root, nodes) };
    errors.push(...c.memo.errors);
  }
  return errors;
}

/**
 * Every synth pass of cdk8s starts with `app.node.findAll()` and then calls each construct's
 * validations, the root's first. The root's `findAll` is wrapped (same result, nothing else
 * changed) so that the pass's walk is kept, and the checks use it instead of walking the tree a
 * second time. A walk is used by one validation only, and only in the task that made it: a
 * validation with no walk since the last one (a direct `node.validate()`) walks the tree itself.
 * The one case this cannot see is code that walks the root itself, adds constructs and then
 * calls the root's `node.validate()` directly, all in one synchronous run; cdk8s's synth always
 * walks right before it validates.
 */
function shareWalks(root: IConstruct, app: AppChecks): void {
  const node = root.node;
  const findAll = node.findAll;
  node.findAll = function (this: typeof node, ...args: Parameters<typeof findAll>) {
    const found = findAll.apply(this, args);
    // Only a preorder walk of the whole tree is the walk the checks need. It is kept until the
    // end of the current task at most: a synth pass walks and validates in one synchronous run.
    if (args[0] === undefined || args[0] === 0) {
      app.fresh = found;
      // One pending clean-up per app, holding no walk: cdk8s walks the tree several times per
      // chart in one synchronous run, and a closure per walk kept every walk alive until the end.
      if (!app.expiring) {
        app.expiring = true;
        queueMicrotask(() => {
          app.fresh = undefined;
          app.expiring = false;
        });
      }
    }
    return found;
  };
}

function walkOf(root: IConstruct, app: AppChecks): readonly IConstruct[] {
  const nodes = app.fresh ?? root.node.findAll();
  app.fresh = undefined;
  return nodes;
}

/** Whether two walks hold the same constructs in the same order: the tree did not change shape. */
function sameConstructs(a: readonly IConstruct[], b: readonly IConstruct[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
