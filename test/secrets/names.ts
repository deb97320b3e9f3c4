/**
 * Name rules the API server and the controllers apply beyond the OpenAPI schema: DNS labels for
 * containers, volumes and Job names (a Job's name is copied into its pods' `job-name` label), 52
 * characters for a CronJob (its Jobs are `<name>-<11 characters>`), label values everywhere,
 * unique container names, volume names and mount paths.
 */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function labelErrors(where: string, labels: Record<string, unknown> | undefined, out: string[]): void {
  for (const [k, v] of Object.entries(labels ?? {})) {
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v)) out.push(`${where}: label ${k}=${String(v)}`);
  }
}

function podErrors(where: string, template: any, out: string[]): void {
  labelErrors(`${where} template`, template?.metadata?.labels, out);
  const spec = template?.spec ?? {};
  const containers = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  const names = new Set<string>();
  for (const c of containers) {
    if (c.name.length > 63 || !DNS_LABEL.test(c.name)) out.push(`${where}: container name ${c.name}`);
    if (names.has(c.name)) out.push(`${where}: duplicate container ${c.name}`);
    names.add(c.name);
    const paths = new Set<string>();
    for (const m of c.volumeMounts ?? []) {
      if (paths.has(m.mountPath)) out.push(`${where}: container ${c.name} mounts ${m.mountPath} twice`);
      paths.add(m.mountPath);
    }
  }
  const volumes = new Set<string>();
  for (const v of spec.volumes ?? []) {
    if (v.name.length > 63 || !DNS_LABEL.test(v.name)) out.push(`${where}: volume name ${v.name}`);
    if (volumes.has(v.name)) out.push(`${where}: duplicate volume ${v.name}`);
    volumes.add(v.name);
  }
}

export function apiServerNameErrors(objects: any[]): string[] {
  const out: string[] = [];
  for (const o of objects) {
    const where = `${o.kind}/${o.metadata.name}`;
    labelErrors(where, o.metadata.labels, out);
    if (o.kind === 'Job' && (o.metadata.name.length > 63 || !DNS_LABEL.test(o.metadata.name)))
      out.push(`${where}: a Job name must fit its pods' job-name label (63)`);
    if (o.kind === 'CronJob' && o.metadata.name.length > 52)
      out.push(`${where}: a CronJob name is at most 52 characters`);
    if (o.spec?.template) podErrors(where, o.spec.template, out);
    if (o.spec?.jobTemplate?.spec?.template) podErrors(where, o.spec.jobTemplate.spec.template, out);
  }
  return out;
}
