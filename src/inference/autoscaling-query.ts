/**
 * KEDA's default Prometheus query: the total of `metrics` over the pods of a StatefulSet
 * (`<name>-<ordinal>`) in one namespace, each pod counted once. A pod scraped by two jobs (a
 * ServiceMonitor and an annotation-based scrape, or two Prometheus jobs) has one series per job;
 * `max by (pod)` keeps one of them (they read the same gauge), where a plain `sum` would count the
 * pod twice and scale out on a load that is not there. With several metrics (e.g. running and
 * waiting requests) each pod's values are added before the pods are summed.
 */
export function kedaPodTotalQuery(metrics: readonly string[], namespace: string, statefulSetName: string): string {
  if (metrics.length === 0) throw new Error('kedaPodTotalQuery: no metric');
  const matchers = `{namespace=${JSON.stringify(namespace)},pod=~${JSON.stringify(`${statefulSetName}-[0-9]+`)}}`;
  return `sum(${metrics.map(m => `max by (pod) (${m}${matchers})`).join(' + ')})`;
}
