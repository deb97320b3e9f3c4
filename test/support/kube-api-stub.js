// A stand-in API server for kubectl's client side: discovery for the kinds given in argv[2]
// (JSON [{ group, version, kind, namespaced }]) and 404 for every object, so that
// `kubectl apply --dry-run=client` reads, maps and prints real files without a cluster. It
// prints its port on stdout and serves until killed.
const http = require('http');

const kinds = JSON.parse(process.argv[2] || '[]');
const plural = k => {
  const l = k.toLowerCase();
  return l.endsWith('s') ? `${l}es` : l.endsWith('y') ? `${l.slice(0, -1)}ies` : `${l}s`;
};
const byGv = new Map();
for (const k of kinds) {
  const gv = k.group ? `${k.group}/${k.version}` : k.version;
  if (!byGv.has(gv)) byGv.set(gv, []);
  byGv.get(gv).push(k);
}
const verbs = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];
const resources = gv => ({
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: gv,
  resources: (byGv.get(gv) || []).map(k => ({
    name: plural(k.kind),
    singularName: k.kind.toLowerCase(),
    namespaced: k.namespaced,
    kind: k.kind,
    verbs,
  })),
});
const groups = () => {
  const names = [...new Set(kinds.filter(k => k.group).map(k => k.group))];
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: names.map(name => {
      const versions = [...new Set(kinds.filter(k => k.group === name).map(k => k.version))].map(v => ({
        groupVersion: `${name}/${v}`,
        version: v,
      }));
      return { name, versions, preferredVersion: versions[0] };
    }),
  };
};

const server = http.createServer((req, res) => {
  const path = req.url.split('?')[0];
  const send = (code, body) => {
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (path === '/version') return send(200, { major: '1', minor: '32', gitVersion: 'v1.32.0' });
  if (path === '/api') return send(200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
  if (path === '/apis') return send(200, groups());
  const gv = /^\/api\/(v1)$/.exec(path)?.[1] ?? /^\/apis\/([^/]+\/[^/]+)$/.exec(path)?.[1];
  if (gv && req.method === 'GET') return send(200, resources(gv));
  send(404, {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    reason: 'NotFound',
    code: 404,
    message: 'not found',
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
