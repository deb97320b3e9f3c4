#!/usr/bin/env node
'use strict';
/**
 * A real Kubernetes control plane for the tests: etcd, kube-apiserver, kube-controller-manager and
 * kube-scheduler built from the pinned Go modules beside this file (versions.json) and run on 127.0.0.1.
 *
 *   node test/cluster/cluster.js build   builds the binaries that are missing from the cache
 *   node test/cluster/cluster.js up      builds what is missing, starts the control plane (or finds it
 *                                        running), waits for /readyz, prints `export KUBECONFIG=...`
 *   node test/cluster/cluster.js down    stops every process `up` started, by its pid file, and removes
 *                                        the run directory (etcd's data, certificates, logs)
 *
 * The API server runs with its default admission plugins (PodSecurity, ServiceAccount, ResourceQuota,
 * the webhook and policy plugins among them) and RBAC, as a managed cluster does; the tests apply the
 * library's output to it, so the server, not the library's reading of it, is the judge.
 *
 * Binaries are cached under .cache/cluster/bin/<module>-<version>/ (CDK8S_GPU_CLUSTER_CACHE moves the
 * whole cache) and rebuilt only when a pin changes; Go's own build cache makes a rebuild in a fresh
 * clone on the same machine a link step.
 */
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const https = require('https');
const net = require('net');
const path = require('path');
const YAML = require('yaml');

const VERSIONS = require('./versions.json');

const ROOT = path.resolve(__dirname, '..', '..');
const CACHE = process.env.CDK8S_GPU_CLUSTER_CACHE || path.join(ROOT, '.cache', 'cluster');
/** One directory per running control plane, named by its Kubernetes release. */
const RUNS = path.join(CACHE, 'run');

/**
 * The pinned releases this run starts: all of them, or those CDK8S_GPU_CLUSTER_RELEASES lists
 * (comma-separated, each pinned), as the lifecycle test does to start one quickly.
 */
const RELEASES = (() => {
  const chosen = process.env.CDK8S_GPU_CLUSTER_RELEASES;
  if (!chosen) return VERSIONS.kubernetes;
  const list = chosen.split(',').map(v => v.trim());
  for (const v of list)
    if (!VERSIONS.kubernetes.includes(v))
      throw new Error(`cluster: CDK8S_GPU_CLUSTER_RELEASES names ${v}, which versions.json does not pin`);
  return list;
})();

/** `v1.36.3` -> `v1.36`: each minor has its own Go module (k8s.io/kubernetes pins its staging modules). */
const minorOf = v => v.split('.').slice(0, 2).join('.');

/**
 * The KWOK Stages the fake nodes run (sigs.k8s.io/kwok kustomize/stage): nodes become Ready and keep a
 * lease; pods go through create, init containers, ready, complete (a Job's) and delete, as its "general"
 * pod lifecycle does; a pod labelled `pod-container-running-failed.stage.kwok.x-k8s.io: "true"` fails
 * with the exit code its annotation gives (the "chaos" stage). Each delay can be set per pod by the
 * stage's annotation (`pod-ready.stage.kwok.x-k8s.io/delay: 5s`; a `.../jitter-delay` above it makes it
 * random up to that); the defaults are scaled down (startKwok) so that a scenario runs in seconds.
 */
const KWOK_STAGES = [
  'kustomize/stage/node/fast/node-initialize.yaml',
  'kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
  'kustomize/stage/pod/general/pod-create.yaml',
  'kustomize/stage/pod/general/pod-init-container-running.yaml',
  'kustomize/stage/pod/general/pod-init-container-completed.yaml',
  'kustomize/stage/pod/general/pod-ready.yaml',
  'kustomize/stage/pod/general/pod-complete.yaml',
  'kustomize/stage/pod/general/pod-delete.yaml',
  'kustomize/stage/pod/chaos/pod-container-running-failed.yaml',
];
/** The controllers with webhooks each control plane runs: how to start them and see them ready. */
const JOBSET = {
  name: 'jobset',
  kind: 'JobSet',
  apiVersion: 'jobset.x-k8s.io/v1alpha2',
  configApiVersion: 'config.jobset.x-k8s.io/v1alpha1',
  probe: {
    apiVersion: 'jobset.x-k8s.io/v1alpha2',
    kind: 'JobSet',
    metadata: { name: 'probe', namespace: 'default' },
    spec: {
      replicatedJobs: [
        {
          name: 'r',
          replicas: 1,
          template: {
            spec: { template: { spec: { containers: [{ name: 'c', image: 'i' }], restartPolicy: 'Never' } } },
          },
        },
      ],
    },
  },
  // The Jobs' Indexed completion mode.
  defaulted: o => {
    const mode = o.spec.replicatedJobs[0].template.spec.completionMode;
    return mode === 'Indexed' || `completionMode ${mode}`;
  },
};
const LWS = {
  name: 'lws',
  kind: 'LeaderWorkerSet',
  apiVersion: 'leaderworkerset.x-k8s.io/v1',
  configApiVersion: 'config.lws.x-k8s.io/v1alpha1',
  probe: {
    apiVersion: 'leaderworkerset.x-k8s.io/v1',
    kind: 'LeaderWorkerSet',
    metadata: { name: 'probe', namespace: 'default' },
    spec: { leaderWorkerTemplate: { workerTemplate: { spec: { containers: [{ name: 'c', image: 'i' }] } } } },
  },
  // The network configuration the CRD requires and only the webhook defaults.
  defaulted: o => {
    const policy = o.spec.networkConfig?.subdomainPolicy;
    return policy === 'Shared' || `subdomainPolicy ${policy}`;
  },
};

/** Kueue's CRDs (config/components/crd/kustomization.yaml), and those its conversion webhook serves. */
const KUEUE_CRDS = [
  'localqueues',
  'clusterqueues',
  'cohorts',
  'workloads',
  'resourceflavors',
  'admissionchecks',
  'workloadpriorityclasses',
  'provisioningrequestconfigs',
  'multikueueconfigs',
  'multikueueclusters',
  'topologies',
];
const KUEUE_CONVERTED = ['localqueues', 'clusterqueues', 'cohorts', 'workloads', 'multikueueclusters'];

/**
 * A namespace labelled so (`excluded`) is outside Kueue, its webhooks and its reconcilers: the guard's
 * differential, whose thousands of objects no queue admits, and whose pods (refused by a zero-pod
 * quota, retried by the controllers) would each call Kueue's pod webhooks.
 */
const KUEUE_OPT_OUT_LABEL = 'cdk8s-gpu.test/kueue';

/** The label of the nodes KWOK manages: the fake GPU nodes test/cluster/sim.ts makes. */
const KWOK_NODE_LABEL = 'cdk8s-gpu.test/kwok';

/**
 * Each Go module beside this file, by its directory: the commands it builds, at which version.
 * Without the version ldflags the Kubernetes binaries report v0.0.0-master, and `kubectl version` and
 * the server's /version would not say which release answered.
 */
const MODULES = {
  ...Object.fromEntries(
    VERSIONS.kubernetes.map(v => [
      `kubernetes-${minorOf(v)}`,
      {
        version: v,
        packages: {
          'kube-apiserver': 'k8s.io/kubernetes/cmd/kube-apiserver',
          'kube-controller-manager': 'k8s.io/kubernetes/cmd/kube-controller-manager',
          'kube-scheduler': 'k8s.io/kubernetes/cmd/kube-scheduler',
          kubectl: 'k8s.io/kubernetes/cmd/kubectl',
        },
        ldflags: () => {
          const [major, minor] = v.replace(/^v/, '').split('.');
          const pkg = 'k8s.io/component-base/version';
          return `-X ${pkg}.gitVersion=${v} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean`;
        },
      },
    ]),
  ),
  etcd: { version: VERSIONS.etcd, packages: { etcd: 'go.etcd.io/etcd/server/v3' }, ldflags: () => '' },
  // The JobSet controller and its webhooks. Its CRD and webhook manifests ship in the module; they are
  // copied beside the binary, so a cached build needs no module cache to run.
  jobset: {
    version: VERSIONS.jobset,
    packages: { jobset: 'sigs.k8s.io/jobset' },
    ldflags: () => '',
    files: {
      'crd.yaml': 'config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml',
      'webhooks.yaml': 'config/components/webhook/manifests.yaml',
      'mutating-patch.yaml': 'config/components/webhook/patches/mutating-patch.yaml',
      'validating-patch.yaml': 'config/components/webhook/patches/validating-patch.yaml',
    },
  },
  // The LeaderWorkerSet controller and its webhooks (the pod webhook gives a group's pods their
  // environment and exclusive placement). v0.9.0: the proxy serves v0.10.0's metadata but not its
  // source; v0.9.0's CRD has the same fields as the v0.10.0 one the library validates against.
  lws: {
    version: VERSIONS.lws,
    module: 'sigs.k8s.io/lws',
    packages: { lws: 'sigs.k8s.io/lws/cmd' },
    ldflags: () => '',
    files: {
      'crd.yaml': 'config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml',
      // The manager also runs a DisaggregatedSet controller, which exits the process when its kind is
      // not served within controller-runtime's cache sync timeout.
      'crd-disaggregatedset.yaml': 'config/crd/bases/disaggregatedset.x-k8s.io_disaggregatedsets.yaml',
      'webhooks.yaml': 'config/webhook/manifests.yaml',
      'mutating-patch.yaml': 'config/webhook/mutating-patch.yaml',
      'validating-patch.yaml': 'config/webhook/validating-patch.yaml',
    },
  },
  // Kueue's controller and webhooks, with its CRDs and webhook manifests from the module.
  kueue: {
    version: VERSIONS.kueue,
    module: 'sigs.k8s.io/kueue',
    packages: { kueue: 'sigs.k8s.io/kueue/cmd/kueue' },
    ldflags: () => `-X sigs.k8s.io/kueue/pkg/version.GitVersion=${VERSIONS.kueue}`,
    files: {
      ...Object.fromEntries(
        KUEUE_CRDS.map(plural => [`crd-${plural}.yaml`, `config/components/crd/bases/kueue.x-k8s.io_${plural}.yaml`]),
      ),
      'webhooks.yaml': 'config/components/webhook/manifests.yaml',
    },
  },
  // KWOK, the kubelets of the fake GPU nodes: it moves pods through their phases by the Stages its
  // module ships (copied beside the binary), so the real controllers and scheduler can be watched.
  kwok: {
    version: VERSIONS.kwok,
    module: 'sigs.k8s.io/kwok',
    packages: { kwok: 'sigs.k8s.io/kwok/cmd/kwok' },
    ldflags: () => '',
    files: Object.fromEntries(KWOK_STAGES.map(f => [path.basename(f), f])),
  },
};

function log(message) {
  process.stderr.write(`cluster: ${message}\n`);
}

/** The directory holding a module's binaries at its pinned version (`kubernetes-v1.36` -> `kubernetes-v1.36.3`). */
function binDir(module) {
  return path.join(CACHE, 'bin', `${module.replace(/-v1\.\d+$/, '')}-${MODULES[module].version}`);
}

/** The path of a command's binary; Kubernetes commands at release `version`. */
function bin(command, version) {
  if (['etcd', 'jobset', 'lws', 'kueue', 'kwok'].includes(command)) return path.join(binDir(command), command);
  return path.join(CACHE, 'bin', `kubernetes-${version}`, command);
}

/** Why the binaries cannot be built here, or undefined when Go is on the PATH. */
function goMissing() {
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  return go.status === 0 ? undefined : 'Go is not installed (the control plane is built from Go modules)';
}

const commandsOf = module => Object.keys(MODULES[module].packages);

/** Whether every binary is cached. */
function built() {
  return Object.keys(MODULES).every(m => commandsOf(m).every(c => fs.existsSync(path.join(binDir(m), c))));
}

/** Builds each module whose binaries are missing; a partial build never lands in the cache. */
function build() {
  for (const [module, spec] of Object.entries(MODULES)) {
    const dir = binDir(module);
    if (commandsOf(module).every(c => fs.existsSync(path.join(dir, c)))) continue;
    const missing = goMissing();
    if (missing) throw new Error(`cluster: cannot build ${module} ${spec.version}: ${missing}`);
    const tmp = `${dir}.tmp-${process.pid}`;
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.mkdirSync(tmp, { recursive: true });
    const commands = commandsOf(module);
    const out = commands.length === 1 ? path.join(tmp, commands[0]) : tmp + path.sep;
    const started = Date.now();
    log(`building ${module} ${spec.version} (${commandsOf(module).join(', ')}); cold, this takes minutes`);
    const result = spawnSync(
      'go',
      [
        'build',
        '-trimpath',
        '-ldflags',
        `-s -w ${spec.ldflags()}`.trim(),
        // One package is written to the file named; several to the directory, each named by Go after its
        // import path (which would name etcd's binary `server`, from go.etcd.io/etcd/server/v3).
        '-o',
        out,
        ...Object.values(spec.packages),
      ],
      {
        cwd: path.join(__dirname, module),
        stdio: ['ignore', 'inherit', 'inherit'],
        // Static binaries, as upstream releases them; the project's own flags, not the caller's.
        env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-buildvcs=false' },
      },
    );
    if (result.status !== 0) {
      fs.rmSync(tmp, { recursive: true, force: true });
      throw new Error(`cluster: go build of ${module} ${spec.version} failed (exit ${result.status})`);
    }
    if (spec.files) {
      const where = spawnSync('go', ['list', '-m', '-f', '{{.Dir}}', spec.module ?? Object.values(spec.packages)[0]], {
        cwd: path.join(__dirname, module),
        encoding: 'utf8',
      });
      const moduleDir = where.stdout.trim();
      for (const [name, file] of Object.entries(spec.files))
        fs.copyFileSync(path.join(moduleDir, file), path.join(tmp, name));
    }
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(tmp, dir);
    log(`built ${module} ${spec.version} in ${Math.round((Date.now() - started) / 1000)} s`);
  }
}

/** A free TCP port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function openssl(args, cwd) {
  const result = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`cluster: openssl ${args.join(' ')} failed: ${result.stderr}`);
}

/** The first address of the service range: the in-cluster `kubernetes` Service, in the serving certificate. */
const SERVICE_RANGE = '10.96.0.0/16';
const KUBERNETES_SERVICE_IP = '10.96.0.1';

/**
 * A CA, the API server's serving certificate (127.0.0.1, localhost and the in-cluster names), an admin
 * client certificate in system:masters, and the service-account signing key pair.
 */
function makePki(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const days = '3650';
  const ca = ['-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', days];
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      days,
      '-subj',
      '/CN=cdk8s-gpu-test-ca',
    ],
    dir,
  );
  const sign = (name, subject, ext) => {
    fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
    openssl(
      ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject],
      dir,
    );
    openssl(['x509', '-req', '-in', `${name}.csr`, ...ca, '-out', `${name}.crt`, '-extfile', `${name}.ext`], dir);
  };
  const names = ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'];
  const sans = [`IP:127.0.0.1`, `IP:${KUBERNETES_SERVICE_IP}`, 'DNS:localhost', ...names.map(n => `DNS:${n}`)];
  sign('apiserver', '/CN=kube-apiserver', `subjectAltName=${sans.join(',')}\nextendedKeyUsage=serverAuth\n`);
  sign('admin', '/O=system:masters/CN=cdk8s-gpu-test-admin', 'extendedKeyUsage=clientAuth\n');
  // The controllers' webhook servers on 127.0.0.1, which the API server calls by URL.
  sign(
    'webhook',
    '/CN=cdk8s-gpu-test-webhooks',
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
  openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
}

function kubeconfigText(pki, port) {
  const b64 = f => fs.readFileSync(path.join(pki, f)).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: cdk8s-gpu-test',
    '  cluster:',
    `    server: https://127.0.0.1:${port}`,
    `    certificate-authority-data: ${b64('ca.crt')}`,
    'users:',
    '- name: admin',
    '  user:',
    `    client-certificate-data: ${b64('admin.crt')}`,
    `    client-key-data: ${b64('admin.key')}`,
    'contexts:',
    '- name: cdk8s-gpu-test',
    '  context: {cluster: cdk8s-gpu-test, user: admin}',
    'current-context: cdk8s-gpu-test',
    '',
  ].join('\n');
}

/** Whether `pid` is alive and runs the binary `exe` (a recycled pid is not ours). */
function ours(pid, exe) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === exe;
  } catch {
    return false;
  }
}

/** GET `urlPath` on an API server with the admin certificate; resolves with the status code and body. */
function get(pki, port, urlPath) {
  return new Promise(resolve => {
    const req = https.get(
      {
        host: '127.0.0.1',
        port,
        path: urlPath,
        ca: fs.readFileSync(path.join(pki, 'ca.crt')),
        cert: fs.readFileSync(path.join(pki, 'admin.crt')),
        key: fs.readFileSync(path.join(pki, 'admin.key')),
        timeout: 5000,
      },
      res => {
        let body = '';
        res.on('data', d => (body += d));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', e => resolve({ status: 0, body: String(e.message) }));
  });
}

const COMPONENTS = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'jobset',
  'lws',
  'kueue',
  'kwok',
];

/**
 * One control plane at one Kubernetes release, in <cache>/run/<version>/: pki/, etcd/, a log and a pid
 * file per component, kubeconfig and state.json (ports, pids, versions).
 */
class ControlPlane {
  constructor(version) {
    this.version = version;
    this.dir = path.join(RUNS, version);
    this.pki = path.join(this.dir, 'pki');
    this.kubeconfig = path.join(this.dir, 'kubeconfig');
    this.stateFile = path.join(this.dir, 'state.json');
  }

  exe(component) {
    return bin(component, this.version);
  }

  /** Starts one component detached, its output in <name>.log and its pid in <name>.pid. */
  start(name, args) {
    const out = fs.openSync(path.join(this.dir, `${name}.log`), 'a');
    const child = spawn(this.exe(name), args, { detached: true, stdio: ['ignore', out, out] });
    fs.closeSync(out);
    // A binary that cannot start shows up as a component that exited, with its log, in waitFor.
    child.on('error', e => fs.appendFileSync(path.join(this.dir, `${name}.log`), `spawn failed: ${e.message}\n`));
    // The pid and the binary it runs: `down` signals only a process that still runs that binary.
    fs.writeFileSync(path.join(this.dir, `${name}.pid`), `${child.pid} ${this.exe(name)}\n`);
    child.unref();
    return child.pid;
  }

  /**
   * Starts a component on ports `freePort` found free, again on others when it could not bind one: a port found free
   * can be taken (by another plane's component, or as a connection's ephemeral port) before the component binds it.
   * Its start applies its objects server-side, so a second start replaces the first's.
   */
  async withFreshPorts(name, startIt) {
    const file = path.join(this.dir, `${name}.log`);
    for (let attempt = 1; ; attempt++) {
      const from = fs.existsSync(file) ? fs.statSync(file).size : 0;
      try {
        return await startIt();
      } catch (e) {
        const since = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').slice(from) : '';
        if (attempt >= 3 || !since.includes('address already in use')) throw e;
        log(`${this.version}: ${name} could not bind a port found free; starting it again on others`);
      }
    }
  }

  /** The tail of each component's log, for a failure message. */
  logTails() {
    return COMPONENTS.map(c => {
      const file = path.join(this.dir, `${c}.log`);
      const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').slice(-15).join('\n') : '(no log)';
      return `--- ${c} (${file}) ---\n${text}`;
    }).join('\n');
  }

  /** Waits until `check` resolves true, polling, for at most `seconds`; the error shows the logs. */
  async waitFor(what, seconds, check) {
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
      const last = await check();
      if (last === true) return;
      if (Date.now() > deadline) {
        throw new Error(`cluster ${this.version}: ${what} not within ${seconds} s (last: ${last})\n${this.logTails()}`);
      }
      await new Promise(r => setTimeout(r, 250));
    }
  }

  /** The state of this control plane if all of it runs and the API server is ready. */
  async running() {
    if (!fs.existsSync(this.stateFile)) return undefined;
    const state = JSON.parse(fs.readFileSync(this.stateFile, 'utf8'));
    if (!COMPONENTS.every(c => ours(state.pids[c], this.exe(c)))) return undefined;
    const ready = await get(this.pki, state.apiserverPort, '/readyz');
    return ready.status === 200 ? state : undefined;
  }

  async up() {
    const existing = await this.running();
    if (existing) {
      log(`${this.version} already up on https://127.0.0.1:${existing.apiserverPort}`);
      return existing;
    }
    // A crash or kill left pid files or data behind: stop what is still ours and start clean.
    this.down({ quiet: true });
    fs.mkdirSync(this.dir, { recursive: true });
    makePki(this.pki);
    const [etcdPort, peerPort, apiserverPort] = [await freePort(), await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const pids = {};
    const state = {
      version: this.version,
      apiserverPort,
      etcdPort,
      pids,
      kubeconfig: this.kubeconfig,
      etcd: VERSIONS.etcd,
    };
    const save = () => fs.writeFileSync(this.stateFile, JSON.stringify(state, null, 2));
    const pki = f => path.join(this.pki, f);
    try {
      pids.etcd = this.start('etcd', [
        `--data-dir=${path.join(this.dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
        // A test cluster's data is thrown away: no fsync keeps etcd fast on a shared CI disk.
        '--unsafe-no-fsync',
        '--log-level=warn',
      ]);
      pids['kube-apiserver'] = this.start('kube-apiserver', [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiserverPort}`,
        `--cert-dir=${this.pki}`,
        `--tls-cert-file=${pki('apiserver.crt')}`,
        `--tls-private-key-file=${pki('apiserver.key')}`,
        `--client-ca-file=${pki('ca.crt')}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${pki('sa.pub')}`,
        `--service-account-signing-key-file=${pki('sa.key')}`,
        // Large enough for the thousands of Services the guard's differential test creates.
        `--service-cluster-ip-range=${SERVICE_RANGE}`,
        '--authorization-mode=Node,RBAC',
        // Pod Security admission, per namespace, is what refuses privileged pods in the tests.
        '--allow-privileged=true',
        '--profiling=false',
      ]);
      save();
      fs.writeFileSync(this.kubeconfig, kubeconfigText(this.pki, apiserverPort));
      await this.waitFor('the API server /readyz', 180, async () => {
        for (const c of ['etcd', 'kube-apiserver']) if (!ours(pids[c], this.exe(c))) return `${c} exited`;
        const r = await get(this.pki, apiserverPort, '/readyz');
        return r.status === 200 || `${r.status} ${r.body.slice(0, 200)}`;
      });
      const clientFlags = [
        `--kubeconfig=${this.kubeconfig}`,
        `--authentication-kubeconfig=${this.kubeconfig}`,
        `--authorization-kubeconfig=${this.kubeconfig}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        '--profiling=false',
      ];
      pids['kube-controller-manager'] = this.start('kube-controller-manager', [
        ...clientFlags,
        `--secure-port=${await freePort()}`,
        `--service-account-private-key-file=${pki('sa.key')}`,
        `--root-ca-file=${pki('ca.crt')}`,
        `--cluster-signing-cert-file=${pki('ca.crt')}`,
        `--cluster-signing-key-file=${pki('ca.key')}`,
        '--use-service-account-credentials=true',
      ]);
      pids['kube-scheduler'] = this.start('kube-scheduler', [...clientFlags, `--secure-port=${await freePort()}`]);
      save();
      // The controller-manager works once it has made the default namespace's service account (pods
      // are refused by the ServiceAccount admission plugin until it exists).
      await this.waitFor('the default service account (kube-controller-manager)', 120, async () => {
        for (const c of COMPONENTS.slice(0, 4)) if (!ours(pids[c], this.exe(c))) return `${c} exited`;
        const r = await get(this.pki, apiserverPort, '/api/v1/namespaces/default/serviceaccounts/default');
        return r.status === 200 || `${r.status}`;
      });
      await this.withFreshPorts('jobset', () => this.startController(pids, save, JOBSET));
      await this.withFreshPorts('lws', () => this.startController(pids, save, LWS));
      await this.withFreshPorts('kueue', () => this.startKueue(pids, save));
      await this.startKwok(pids, save);
    } catch (e) {
      this.down({ quiet: true });
      throw e;
    }
    log(`${this.version} up on https://127.0.0.1:${apiserverPort} (etcd ${VERSIONS.etcd})`);
    return state;
  }

  /** kubectl of this release against this control plane; throws with its output when it fails. */
  kubectl(args, input) {
    const r = spawnSync(bin('kubectl', this.version), args, {
      input,
      encoding: 'utf8',
      env: { ...process.env, KUBECONFIG: this.kubeconfig },
    });
    if (r.status !== 0) throw new Error(`cluster ${this.version}: kubectl ${args.join(' ')} failed: ${r.stderr}`);
    return r.stdout;
  }

  /**
   * A controller with its webhooks (JobSet, LeaderWorkerSet), as a cluster runs it: its CRD, the
   * controller on a webhook port of its own (serving a certificate of the test CA), then its webhook
   * configurations from the module with their kustomize patches, called by URL on 127.0.0.1 (the
   * `webhook-service` they name does not exist here). Ready once its mutating webhook defaults a dry run.
   */
  async startController(pids, save, c) {
    const files = binDir(c.name);
    for (const crd of fs.readdirSync(files).filter(f => /^crd.*\.yaml$/.test(f)))
      this.kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(files, crd)]);
    await this.waitFor(`the ${c.kind} CRD served`, 60, async () => {
      const r = await get(
        this.pki,
        JSON.parse(fs.readFileSync(this.stateFile, 'utf8')).apiserverPort,
        `/apis/${c.apiVersion}`,
      );
      return r.status === 200 || `${r.status}`;
    });
    const [webhookPort, healthPort] = [await freePort(), await freePort()];
    const certs = path.join(this.dir, `${c.name}-certs`);
    fs.mkdirSync(certs, { recursive: true });
    fs.copyFileSync(path.join(this.pki, 'webhook.crt'), path.join(certs, 'tls.crt'));
    fs.copyFileSync(path.join(this.pki, 'webhook.key'), path.join(certs, 'tls.key'));
    const config = path.join(this.dir, `${c.name}-config.yaml`);
    fs.writeFileSync(
      config,
      YAML.stringify({
        apiVersion: c.configApiVersion,
        kind: 'Configuration',
        leaderElection: { leaderElect: false },
        internalCertManagement: { enable: false },
        webhook: { host: '127.0.0.1', port: webhookPort, certDir: certs },
        metrics: { bindAddress: '0' },
        health: { healthProbeBindAddress: `127.0.0.1:${healthPort}` },
      }),
    );
    pids[c.name] = this.start(c.name, [`--config=${config}`, `--kubeconfig=${this.kubeconfig}`]);
    save();
    await this.waitFor(`the ${c.kind} controller /readyz`, 120, async () => {
      if (!ours(pids[c.name], this.exe(c.name))) return `${c.name} exited`;
      const r = await new Promise(resolve =>
        require('http')
          .get({ host: '127.0.0.1', port: healthPort, path: '/readyz', timeout: 2000 }, res => resolve(res.statusCode))
          .on('error', e => resolve(e.message)),
      );
      return r === 200 || String(r);
    });
    const patches = ['mutating', 'validating'].map(k =>
      YAML.parse(fs.readFileSync(path.join(files, `${k}-patch.yaml`), 'utf8')),
    );
    const ca = fs.readFileSync(path.join(this.pki, 'ca.crt')).toString('base64');
    const configs = YAML.parseAllDocuments(fs.readFileSync(path.join(files, 'webhooks.yaml'), 'utf8'))
      .map(d => d.toJS())
      .filter(Boolean)
      .map(w => {
        for (const op of patches[w.kind === 'MutatingWebhookConfiguration' ? 0 : 1]) {
          const index = /^\/webhooks\/(\d+)$/.exec(op.path);
          if (op.op !== 'replace' || !index)
            throw new Error(`cluster: unexpected ${c.kind} webhook patch ${JSON.stringify(op)}`);
          w.webhooks[Number(index[1])] = op.value;
        }
        w.metadata.name = `${c.name}-${w.metadata.name}`;
        for (const h of w.webhooks)
          h.clientConfig = { url: `https://127.0.0.1:${webhookPort}${h.clientConfig.service.path}`, caBundle: ca };
        return w;
      });
    this.kubectl(
      ['apply', '--server-side', '--force-conflicts', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: configs }),
    );
    // A dry run comes back with a default only the mutating webhook writes once the API server has read
    // the webhook configurations.
    await this.waitFor(`the ${c.kind} webhooks`, 60, async () => {
      const r = spawnSync(bin('kubectl', this.version), ['create', '--dry-run=server', '-o', 'json', '-f', '-'], {
        input: JSON.stringify(c.probe),
        encoding: 'utf8',
        env: { ...process.env, KUBECONFIG: this.kubeconfig },
      });
      if (r.status !== 0) return r.stderr.trim().slice(0, 200);
      return c.defaulted(JSON.parse(r.stdout));
    });
  }

  /**
   * Kueue v0.17 as its own manifests deploy it, but on 127.0.0.1. With its certificate management
   * off it needs a metrics certificate at a fixed path (/etc/kueue/metrics/certs, cmd/kueue/main.go),
   * so it runs with it on: its rotator (open-policy-agent/cert-controller) signs a certificate for
   * `kueue-webhook-service.kueue-system.svc`, stores it in the Secret and injects its CA into the
   * webhook configurations and the conversion CRDs. The API server calls a webhook Service at that
   * name (the TLS server name) on the address the Service resolves to: an ExternalName Service to
   * localhost, on Kueue's own webhook port, reaches the process here. A kubelet would mount the
   * Secret into the rotator's certificate directory; here the files are written from it. Ready once
   * its mutating webhook suspends a queued Job in a dry run.
   */
  async startKueue(pids, save) {
    const files = binDir('kueue');
    const ns = 'kueue-system';
    const service = 'kueue-webhook-service';
    const [webhookPort, healthPort] = [await freePort(), await freePort()];
    const serviceRef = p => ({ namespace: ns, name: service, path: p, port: webhookPort });
    const crds = KUEUE_CRDS.map(plural => {
      const crd = YAML.parse(fs.readFileSync(path.join(files, `crd-${plural}.yaml`), 'utf8'));
      // config/components/crd/patches/webhook_in_<plural>.yaml
      if (KUEUE_CONVERTED.includes(plural))
        crd.spec.conversion = {
          strategy: 'Webhook',
          webhook: { clientConfig: { service: serviceRef('/convert') }, conversionReviewVersions: ['v1'] },
        };
      return crd;
    });
    // config/components/webhook/kustomization.yaml: the pod, Deployment and StatefulSet webhooks skip
    // the system namespaces.
    const optOut = { key: KUEUE_OPT_OUT_LABEL, operator: 'NotIn', values: ['excluded'] };
    const skipSystem = {
      matchExpressions: [
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', ns] },
        optOut,
      ],
    };
    const webhooks = YAML.parseAllDocuments(fs.readFileSync(path.join(files, 'webhooks.yaml'), 'utf8'))
      .map(d => d.toJS())
      .filter(Boolean)
      .map(w => {
        w.metadata.name = `kueue-${w.metadata.name}`;
        for (const h of w.webhooks) {
          h.clientConfig = { service: serviceRef(h.clientConfig.service.path) };
          h.namespaceSelector = /^[mv](pod|deployment|statefulset)\.kb\.io$/.test(h.name)
            ? skipSystem
            : { matchExpressions: [optOut] };
        }
        return w;
      });
    const objects = [
      ...crds,
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'kueue-webhook-server-cert', namespace: ns } },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: service, namespace: ns },
        spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ port: webhookPort }] },
      },
      ...webhooks,
    ];
    this.kubectl(
      ['apply', '--server-side', '--force-conflicts', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
    );
    const apiserverPort = JSON.parse(fs.readFileSync(this.stateFile, 'utf8')).apiserverPort;
    await this.waitFor('the Kueue CRDs served', 60, async () => {
      const r = await get(this.pki, apiserverPort, '/apis/kueue.x-k8s.io/v1beta2');
      return r.status === 200 || `${r.status}`;
    });
    const certs = path.join(this.dir, 'kueue-certs');
    fs.mkdirSync(certs, { recursive: true });
    const config = path.join(this.dir, 'kueue-config.yaml');
    fs.writeFileSync(
      config,
      YAML.stringify({
        apiVersion: 'config.kueue.x-k8s.io/v1beta2',
        kind: 'Configuration',
        namespace: ns,
        leaderElection: { leaderElect: false },
        internalCertManagement: {
          enable: true,
          webhookServiceName: service,
          webhookSecretName: 'kueue-webhook-server-cert',
        },
        webhook: { host: '127.0.0.1', port: webhookPort, certDir: certs },
        metrics: { bindAddress: '0' },
        health: { healthProbeBindAddress: `127.0.0.1:${healthPort}` },
        // Its reconcilers too skip the opted-out namespaces (ManagedJobsNamespaceSelectorAlwaysRespected,
        // on from v0.15): they would suspend the differential's queued JobSets, which no queue admits.
        managedJobsNamespaceSelector: skipSystem,
        integrations: {
          frameworks: [
            'batch/job',
            'jobset.x-k8s.io/jobset',
            'leaderworkerset.x-k8s.io/leaderworkerset',
            'pod',
            'statefulset',
            'deployment',
          ],
        },
      }),
    );
    pids.kueue = this.start('kueue', [
      `--config=${config}`,
      `--kubeconfig=${this.kubeconfig}`,
      // Its on-demand visibility API server binds a fixed port (8082): one per machine, not per plane.
      '--feature-gates=VisibilityOnDemand=false',
    ]);
    save();
    // What the kubelet would do: the Secret's certificate, once signed, in the rotator's directory.
    await this.waitFor('the Kueue webhook certificate', 120, async () => {
      if (!ours(pids.kueue, this.exe('kueue'))) return 'kueue exited';
      const r = await get(this.pki, apiserverPort, `/api/v1/namespaces/${ns}/secrets/kueue-webhook-server-cert`);
      const data = r.status === 200 ? JSON.parse(r.body).data : undefined;
      if (!data?.['tls.crt'] || !data?.['tls.key']) return `secret ${r.status}, not signed yet`;
      for (const f of ['tls.crt', 'tls.key'])
        fs.writeFileSync(path.join(certs, f), require('buffer').Buffer.from(data[f], 'base64'));
      return true;
    });
    await this.waitFor('the Kueue controller /readyz', 180, async () => {
      if (!ours(pids.kueue, this.exe('kueue'))) return 'kueue exited';
      const r = await new Promise(resolve =>
        require('http')
          .get({ host: '127.0.0.1', port: healthPort, path: '/readyz', timeout: 2000 }, res => resolve(res.statusCode))
          .on('error', e => resolve(e.message)),
      );
      return r === 200 || String(r);
    });
    const probe = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'kueue-probe', namespace: 'default', labels: { 'kueue.x-k8s.io/queue-name': 'probe' } },
      spec: { template: { spec: { containers: [{ name: 'c', image: 'i' }], restartPolicy: 'Never' } } },
    };
    await this.waitFor('the Kueue webhooks', 120, async () => {
      if (!ours(pids.kueue, this.exe('kueue'))) return 'kueue exited';
      const r = spawnSync(bin('kubectl', this.version), ['create', '--dry-run=server', '-o', 'json', '-f', '-'], {
        input: JSON.stringify(probe),
        encoding: 'utf8',
        env: { ...process.env, KUBECONFIG: this.kubeconfig },
      });
      if (r.status !== 0) return r.stderr.trim().slice(0, 300);
      return JSON.parse(r.stdout).spec.suspend === true || 'the queued Job was not suspended';
    });
  }

  /**
   * KWOK for the nodes labelled KWOK_NODE_LABEL, with the module's Stages, their default delays cut to
   * 100 ms without jitter, and a deletion's jitter from the pod's annotation instead of the end of its
   * grace period: each step takes exactly its delay unless the pod asks for jitter. Ready once it has
   * made a probe node Ready.
   */
  async startKwok(pids, save) {
    const files = binDir('kwok');
    const stages = KWOK_STAGES.map(f => {
      const stage = YAML.parse(fs.readFileSync(path.join(files, path.basename(f)), 'utf8'));
      const delay = stage.spec.delay;
      if (delay) {
        // A node's status every 10 s: the node lifecycle controller marks a node NotReady, and its pods
        // not Ready, when no heartbeat came within its grace period (50 s), and KWOK keeps no lease here.
        if (delay.durationMilliseconds !== undefined)
          delay.durationMilliseconds = stage.metadata.name === 'node-heartbeat-with-lease' ? 10_000 : 100;
        // No default jitter: KWOK takes a jitter below the delay as the delay (pkg/utils/lifecycle
        // Stage.Delay), which would cut a pod's own delay annotation short; a pod may still set one.
        delete delay.jitterDurationMilliseconds;
      }
      // A deletion takes the pod's own `pod-delete` delay (its drain, scaled down), not a random moment
      // up to the end of its grace period: a scenario's timing is then its own, never luck.
      if (stage.metadata.name === 'pod-delete')
        delay.jitterDurationFrom = {
          expressionFrom: '.metadata.annotations["pod-delete.stage.kwok.x-k8s.io/jitter-delay"]',
        };
      return YAML.stringify(stage);
    });
    const config = path.join(this.dir, 'kwok-stages.yaml');
    fs.writeFileSync(config, stages.join('---\n'));
    pids.kwok = this.start('kwok', [
      `--kubeconfig=${this.kubeconfig}`,
      `--config=${config}`,
      '--manage-all-nodes=false',
      `--manage-nodes-with-label-selector=${KWOK_NODE_LABEL}`,
      '--cidr=10.64.0.0/16',
      '--node-ip=10.63.0.1',
    ]);
    save();
    const probe = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'kwok-probe', labels: { [KWOK_NODE_LABEL]: 'true' } },
    };
    this.kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(probe));
    await this.waitFor('KWOK (a probe node Ready)', 60, async () => {
      if (!ours(pids.kwok, this.exe('kwok'))) return 'kwok exited';
      const r = spawnSync(
        bin('kubectl', this.version),
        ['get', 'node', 'kwok-probe', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'],
        { encoding: 'utf8', env: { ...process.env, KUBECONFIG: this.kubeconfig } },
      );
      return r.stdout.trim() === 'True' || `Ready=${r.stdout.trim() || r.stderr.trim().slice(0, 100)}`;
    });
    this.kubectl(['delete', 'node', 'kwok-probe', '--wait=false']);
  }

  /** Sends `signal` to each component still ours; returns those signalled. */
  signal(pids, sig) {
    const signalled = [];
    for (const c of [...COMPONENTS].reverse()) {
      if (!pids[c] || !ours(pids[c].pid, pids[c].exe)) continue;
      try {
        process.kill(pids[c].pid, sig);
        signalled.push([c, pids[c]]);
      } catch {
        // gone between the check and the signal
      }
    }
    return signalled;
  }

  /** Stops every component by its pid file (never by name), then removes the run directory. */
  down({ quiet } = {}) {
    const pids = {};
    for (const c of COMPONENTS) {
      const file = path.join(this.dir, `${c}.pid`);
      if (!fs.existsSync(file)) continue;
      const [pid, exe] = fs.readFileSync(file, 'utf8').trim().split(' ');
      pids[c] = { pid: Number(pid), exe };
    }
    const stopped = this.signal(pids, 'SIGTERM');
    const alive = () => stopped.some(([, p]) => ours(p.pid, p.exe));
    for (const deadline = Date.now() + 15_000; Date.now() < deadline && alive();) spawnSync('sleep', ['0.1']);
    this.signal(pids, 'SIGKILL');
    // Wait for the kernel to reap them, so etcd's files are closed before they are removed.
    for (const deadline = Date.now() + 5_000; Date.now() < deadline && alive();) spawnSync('sleep', ['0.1']);
    fs.rmSync(this.dir, { recursive: true, force: true });
    if (!quiet && stopped.length)
      log(`${this.version}: stopped ${stopped.map(([c, p]) => `${c} (${p.pid})`).join(', ')}`);
    return stopped.length;
  }
}

const planes = () => RELEASES.map(v => new ControlPlane(v));

/** Whether every control plane runs and is ready. */
async function running() {
  for (const p of planes()) if (!(await p.running())) return false;
  return true;
}

/** Builds what is missing, then starts each control plane that does not already run; their states. */
async function up() {
  build();
  // Each release has its own ports and files: they start side by side.
  return Promise.all(planes().map(p => p.up()));
}

/** Stops every control plane, including those of releases no longer pinned. */
function down() {
  const versions = new Set(VERSIONS.kubernetes);
  if (fs.existsSync(RUNS)) for (const d of fs.readdirSync(RUNS)) versions.add(d);
  let stopped = 0;
  for (const v of versions) {
    // A release no longer pinned has no module: its binaries are found by its cache directory.
    stopped += new ControlPlane(v).down();
  }
  fs.rmSync(RUNS, { recursive: true, force: true });
  if (stopped === 0) log('nothing was running');
}

module.exports = {
  build,
  built,
  up,
  down,
  running,
  goMissing,
  COMPONENTS,
  KUEUE_OPT_OUT_LABEL,
  KWOK_NODE_LABEL,
  RUNS,
  VERSIONS,
};

if (require.main === module) {
  const main = {
    build: async () => build(),
    up: async () => {
      const states = await up();
      // The newest release is the default; the others are one KUBECONFIG away.
      for (const s of states.slice(0, -1))
        process.stdout.write(`# Kubernetes ${s.version}: export KUBECONFIG=${s.kubeconfig}\n`);
      process.stdout.write(`export KUBECONFIG=${states[states.length - 1].kubeconfig}\n`);
    },
    down: async () => down(),
  }[process.argv[2]];
  if (!main) {
    process.stderr.write('usage: node test/cluster/cluster.js build|up|down\n');
    process.exit(2);
  }
  main().catch(e => {
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  });
}
