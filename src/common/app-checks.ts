import { App } from 'cdk8s';
import { IConstruct, Node } from 'constructs';

/** The app-wide checks of one app, and the tree walk they share. */
interface AppChecks {
  readonly checks: Map<string, AppCheck>;
  /** The latest walk of the whole tree that no check has used yet (see `walkOf`). */
  fresh?: IConstruct[];
  /** Whether the end of the current task will drop `fresh`. */
  expiring?: boolean;
  /** How deep in `synth()`/`synthYaml()` of the app the stack is (see `shareWalks`). */
  synthesizing: number;
  /** While synthesizing: the walk of the whole tree, until a construct is added or removed. */
  memo?: IConstruct[];
  /** The removal count when `memo` was taken. */
  memoRemovals?: number;
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
    APPS.set(root, app = { checks: new Map(), synthesizing: 0 });
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
 * validations, the root's first. The root's `findAll` is wrapped (same result) so that the pass's
 * walk is kept, and the checks use it instead of walking the tree a second time. A walk is used by
 * one validation only, and only in the task that made it: a validation with no walk since the
 * last one (a direct `node.validate()`) walks the tree itself. The one case this cannot see is
 * code that walks the root itself, adds constructs and then calls the root's `node.validate()`
 * directly, all in one synchronous run; cdk8s's synth always walks right before it validates.
 *
 * While the app synthesizes (`synth()` or `synthYaml()` of a cdk8s App), one walk serves every
 * pass: cdk8s walks the whole tree again for every chart it writes (cdk8s-team/cdk8s-core#1658),
 * which made an app of one chart per workload spend most of its synth walking. The memo is
 * dropped when the tree changes, so every walk returns what a fresh one would: a construct added
 * anywhere (every `addChild` asks the root's `node.locked`, which is wrapped to notice) or removed
 * anywhere (while an app synthesizes, `Node.prototype.tryRemoveChild` counts removals; see
 * `countRemovals`). Without either
 * hook (another release of constructs, or a root from another copy of it) there is no memo.
 */
function shareWalks(root: IConstruct, app: AppChecks): void {
  const node = root.node;
  const findAll = node.findAll;
  const lockedGetter = getterOf(node, 'locked');
  // Without the hooks that see changes the memo could go stale, so it is not used.
  const memoizes = lockedGetter !== undefined && node instanceof Node && typeof Node.prototype.tryRemoveChild === 'function' && wrapSynth(root, app);
  if (memoizes) {
    define(node, 'locked', {
      get(this: typeof node) {
        app.memo = undefined;
        return lockedGetter!.call(this);
      },
    });
  }
  define(node, 'findAll', {
    writable: true,
    value: function (this: typeof node, ...args: Parameters<typeof findAll>) {
      // Only a preorder walk of the whole tree is the walk the checks need.
      const whole = args[0] === undefined || args[0] === 0;
      if (app.memo && app.memoRemovals !== removals) app.memo = undefined;
      if (whole && app.memo) {
        app.fresh = app.memo;
        // A copy: the caller may change its array; the memo must not change with it.
        return app.memo.slice();
      }
      const found = findAll.apply(this, args);
      if (!whole) return found;
      if (app.synthesizing > 0) {
        app.memo = found.slice();
        app.memoRemovals = removals;
      }
      app.fresh = app.memo ?? found;
      // The walk is kept until the end of the current task at most: a synth pass walks and
      // validates in one synchronous run. One pending clean-up per app, holding no walk: cdk8s
      // walks the tree several times per chart, and a closure per walk kept every walk alive.
      if (!app.expiring) {
        app.expiring = true;
        queueMicrotask(() => {
          app.fresh = undefined;
          app.expiring = false;
        });
      }
      return found;
    },
  });
}

/** Wraps the app's `synth` and `synthYaml` (whatever a subclass made them) to mark the synth. */
function wrapSynth(root: IConstruct, app: AppChecks): boolean {
  if (!(root instanceof App)) return false;
  for (const method of ['synth', 'synthYaml'] as const) {
    const inner = root[method] as (this: App) => unknown;
    define(root, method, {
      writable: true,
      value: function (this: App, ...args: unknown[]) {
        app.synthesizing++;
        const stopCounting = countRemovals();
        try {
          // A subclass's synth may take arguments: they pass through.
          return (inner as (...a: unknown[]) => unknown).apply(this, args);
        } finally {
          stopCounting();
          if (--app.synthesizing === 0) app.memo = undefined;
        }
      },
    });
  }
  return true;
}

/** Constructs removed anywhere while some app synthesized (see `countRemovals`). */
let removals = 0;
/** How many synths (of any app) are running, and what `tryRemoveChild` was before the first. */
let counting = 0;
let uncounted: ((this: Node, childName: string) => boolean) | undefined;
let counter: ((this: Node, childName: string) => boolean) | undefined;

/**
 * Counts successful `tryRemoveChild` calls (constructs' only way to remove a child) while an app
 * synthesizes, so that a memoized walk holding a removed construct is dropped: a chart an App
 * removes before or during cdk8s's synth must not be written. The memo exists only during a
 * synth, so only then are removals counted: constructs' prototype is wrapped for the call and put
 * back after it (unless something else replaced the method meanwhile). The method's behaviour is
 * unchanged. Returns what ends the counting for this synth.
 */
function countRemovals(): () => void {
  const proto = Node.prototype as unknown as { tryRemoveChild: (this: Node, childName: string) => boolean };
  if (counting++ === 0) {
    const original = uncounted = proto.tryRemoveChild;
    counter = function tryRemoveChild(this: Node, childName: string): boolean {
      const removed = original.call(this, childName);
      if (removed) removals++;
      return removed;
    };
    define(proto, 'tryRemoveChild', { writable: true, value: counter });
  }
  return () => {
    if (--counting === 0) {
      if (proto.tryRemoveChild === counter) define(proto, 'tryRemoveChild', { writable: true, value: uncounted });
      uncounted = counter = undefined;
    }
  };
}

/** An own property that stays out of `Object.keys` and JSON, as the prototype's member was. */
function define(target: object, key: string, desc: PropertyDescriptor): void {
  Object.defineProperty(target, key, { configurable: true, enumerable: false, ...desc });
}

function getterOf(target: object, key: string): (() => unknown) | undefined {
  for (let o: object | null = target; o; o = Object.getPrototypeOf(o)) {
    const d = Object.getOwnPropertyDescriptor(o, key);
    if (d) return d.get;
  }
  return undefined;
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
