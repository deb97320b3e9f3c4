import * as fs from 'fs';
import * as path from 'path';
import { ApiObject } from 'cdk8s';
import * as k8s from 'cdk8s-plus-32/lib/imports/k8s';
import { Construct } from 'constructs';
import { migSource } from '../common/gpu';
import { KUEUE_QUEUE_LABEL, kueueQueueName } from '../common/kueue';
import { instanceSelector, LABEL_NAME, labelSet, selectorLabels, WorkloadIdentity } from '../common/labels';
import { LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION } from '../common/lws';
import { NetworkAccess, workloadNetworkPolicy } from '../common/network-policy';
import { customKind, ManifestKind, ManifestObject } from '../common/manifest-object';
import { PodTemplate } from '../common/pod-template';
import { Rdma, RdmaPodParts, resolveRdma } from '../common/rdma';
import { addPodValidation } from '../common/workload-pod';
import * as lws from '../imports/lws';
import { Validator } from '../validation/validate';
import { MultiNodeLaunch, POD_IP_ENV, POD_IP_VARIABLE, ServingEngine } from './engine';
import type { Termination } from './serving-timing';

/**
 * Multi-node serving: one replica of a model larger than one node is a LeaderWorkerSet group of
 * `nodes` pods, one per node. The leader serves the API (and is what the client Service, the
 * headless Service and the InferencePool select); the workers run the other ranks and never
 * receive requests, unless the launch has every pod serve its own ranks (`workersServe`: vLLM's
 * per-rank servers), where the workers are serving pods as the leader is. LWS creates, restarts
 * and rolls out the group as one unit.
 */

/** The LeaderWorkerSet API version and kind (leaderworkerset.x-k8s.io/v1, the version v0.10.0 serves). */
export const LEADER_WORKER_SET_GVK = { apiVersion: 'leaderworkerset.x-k8s.io/v1', kind: 'LeaderWorkerSet' };

/**
 * The oldest LeaderWorkerSet release the output is written for: the CRD vendored in
 * src/validation/crds/lws (v0.10.0). `LWS_WORKER_INDEX` is injected from v0.6.0, `startupPolicy`
 * exists from v0.3.0, `volumeClaimTemplates` from v0.8, `RecreateGroupOnPodRestart` as the default
 * from v0.2.
 */
export const MIN_LWS_VERSION = '0.10';

/**
 * The oldest Kueue that admits a LeaderWorkerSet as one workload per group: its LeaderWorkerSet
 * integration (kueue#3232, documented in kueue#4283, 2025-02: site/content/en/docs/tasks/run/
 * leaderworkerset.md), enabled with both `pod` and `leaderworkerset.x-k8s.io/leaderworkerset` in
 * `integrations.frameworks` (the integration admits a group as a pod group).
 */
export const MIN_LWS_KUEUE_VERSION = '0.11';

/** The component label of workers: not the serving component, so no Service, pool or PDB of leaders selects them. */
export const WORKER_COMPONENT = 'inference-worker';

/** The variables LWS injects into every container of a group (api/leaderworkerset/v1 leaderworkerset_types.go). */
export const LWS_ENV = {
  leaderAddress: 'LWS_LEADER_ADDRESS',
  groupSize: 'LWS_GROUP_SIZE',
  workerIndex: 'LWS_WORKER_INDEX',
} as const;

/** A LeaderWorkerSet as the library composes it: the generated types, with the pod templates typed as core/v1. */
export interface TypedLeaderWorkerSet {
  readonly metadata?: k8s.ObjectMeta;
  readonly spec: Omit<lws.LeaderWorkerSetSpec, 'leaderWorkerTemplate'> & {
    readonly leaderWorkerTemplate: Omit<
      lws.LeaderWorkerSetSpecLeaderWorkerTemplate,
      'leaderTemplate' | 'workerTemplate' | 'volumeClaimTemplates'
    > & {
      readonly leaderTemplate?: k8s.PodTemplateSpec;
      readonly workerTemplate: k8s.PodTemplateSpec;
      readonly volumeClaimTemplates?: k8s.KubePersistentVolumeClaimProps[];
    };
  };
}

/**
 * Converts a typed LeaderWorkerSet to its API JSON: the generated converter for its own fields and
 * cdk8s-plus-32's converters for the embedded pod templates and claims.
 */
export function toJson_TypedLeaderWorkerSet(
  props: TypedLeaderWorkerSet | undefined,
): Record<string, unknown> | undefined {
  if (props === undefined) return undefined;
  const t = props.spec.leaderWorkerTemplate;
  return lws.toJson_LeaderWorkerSetProps({
    metadata: props.metadata,
    spec: {
      ...props.spec,
      leaderWorkerTemplate: {
        ...t,
        leaderTemplate: k8s.toJson_PodTemplateSpec(t.leaderTemplate),
        workerTemplate: k8s.toJson_PodTemplateSpec(t.workerTemplate),
        volumeClaimTemplates: t.volumeClaimTemplates?.map(c => k8s.toJson_KubePersistentVolumeClaimProps(c)),
      },
    },
  });
}

/** The LeaderWorkerSet kind the library makes (checked against the vendored CRD after a JsonPatch). */
export const LEADER_WORKER_SET: ManifestKind<TypedLeaderWorkerSet> = {
  ...customKind<TypedLeaderWorkerSet>(LEADER_WORKER_SET_GVK.apiVersion, LEADER_WORKER_SET_GVK.kind),
  toJson: toJson_TypedLeaderWorkerSet,
};

/** The group a serving replica spans, checked: what the LeaderWorkerSet is composed from. */
export interface ServingGroup {
  readonly nodes: number;
  readonly launch: MultiNodeLaunch;
  /** The engine's tensor-parallel size: GPUs per pod, or per group where the engine spans it. */
  readonly tensorParallel: number;
  /** The LeaderWorkerSet's name (also the name of the headless Service LWS creates for the group). */
  readonly name: string;
  readonly queueName?: string;
  /** RDMA between the pods of the group. */
  readonly rdma?: RdmaPodParts;
  /** Groups an update starts before it takes old ones out (LWS maxSurge); 0 replaces one group at a time. */
  readonly surge: number;
  /** The node label whose domains each hold one group alone (LWS exclusive placement). */
  readonly exclusiveTopology?: string;
}

/** What the group needs from the serving practice's resolved props. */
export interface GroupInputs {
  readonly engine: ServingEngine;
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly selector: Record<string, string>;
  readonly replicas?: number;
  readonly termination: Termination;
  readonly cache: { readonly claimTemplate?: k8s.KubePersistentVolumeClaimProps };
}

/** The props multi-node serving reads. */
export interface GroupProps {
  readonly nodes?: number;
  readonly queueName?: string;
  readonly rdma?: Rdma;
  readonly groupSurge?: number;
  readonly gpuResource?: string;
  readonly extraArgs?: string[];
  readonly port?: number;
  readonly env?: Record<string, unknown>;
  readonly groupExclusiveTopology?: string;
  readonly pod?: { readonly annotations?: Record<string, string> };
}

/**
 * Checks `nodes` (and what needs it) and resolves the group; undefined for one node, where the
 * output is the single-pod StatefulSet.
 */
export function resolveGroup(
  v: Validator,
  props: GroupProps,
  engine: ServingEngine,
  gpus: number,
  name: string,
): ServingGroup | undefined {
  const nodes = v.wholeNumber('nodes', props.nodes ?? 1, 1, 64);
  if (nodes === 1) {
    if (props.queueName !== undefined)
      v.fail(
        'queueName',
        'needs nodes > 1: Kueue admits LeaderWorkerSet groups; one-node serving is a StatefulSet',
        props.queueName,
      );
    if (props.rdma !== undefined)
      v.fail('rdma', 'needs nodes > 1: within a node NCCL uses NVLink or PCIe, not the network', props.rdma);
    if (props.groupSurge !== undefined)
      v.fail('groupSurge', 'needs nodes > 1: a one-node replica surges by one pod (workloadKind)', props.groupSurge);
    if (props.groupExclusiveTopology !== undefined)
      v.fail(
        'groupExclusiveTopology',
        'needs nodes > 1: it places the pods of a LeaderWorkerSet group',
        props.groupExclusiveTopology,
      );
    return undefined;
  }
  if (typeof engine.multiNode === 'string') v.fail('nodes', `must be 1: ${engine.multiNode}`, nodes);
  const launch = engine.multiNode;
  const mig = migSource(props);
  if (mig !== undefined)
    v.fail('nodes', `must be 1 with MIG instances (${mig}): NCCL does not connect MIG instances`, nodes);
  checkRendezvousPort(v, props.port ?? engine.port, launch);
  // LWS's pod webhook puts its own values of these in front of a container's env and drops any given
  // here (pkg/utils/pod/pod_utils.go, addEnvVarsIfNotExists): a value set here would never arrive.
  for (const name of Object.values(LWS_ENV))
    if (props.env !== null && typeof props.env === 'object' && Object.prototype.hasOwnProperty.call(props.env, name))
      v.fail(
        `env.${name}`,
        "is set by LeaderWorkerSet's pod webhook on every pod of a group, replacing this value",
        typeof props.env[name] === 'string' ? props.env[name] : name,
      );
  if (props.pod?.annotations?.[LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION] !== undefined)
    v.fail(
      `pod.annotations.${LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION}`,
      'is set by the construct: use groupExclusiveTopology',
      props.pod.annotations[LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION],
    );
  const exclusiveTopology =
    props.groupExclusiveTopology === undefined
      ? undefined
      : v.qualifiedName('groupExclusiveTopology', props.groupExclusiveTopology);
  const rdma = resolveRdma(v, props.rdma);
  const queueName = props.queueName === undefined ? undefined : kueueQueueName(v, props.queueName);
  // LWS names the worker StatefulSet `<lws>-<group>` and its pods `<lws>-<group>-<worker>`; the
  // controller-revision-hash label (`<statefulset>-<10 characters>`) must stay a 63-character label
  // value up to group 9999.
  const lwsName = `${name}-lws`;
  if (lwsName.length > 47)
    v.fail(
      'name',
      `must leave the LeaderWorkerSet name (${lwsName}) at most 47 characters with nodes > 1, so LWS's pod and revision labels fit in 63`,
      name,
    );
  return {
    nodes,
    launch,
    tensorParallel: launch.tensorParallelAcrossNodes ? gpus * nodes : gpus,
    name: lwsName,
    queueName,
    rdma,
    surge: v.wholeNumber('groupSurge', props.groupSurge ?? 0, 0),
    ...(exclusiveTopology !== undefined ? { exclusiveTopology } : {}),
  };
}

/**
 * The leader's engine listens on its rendezvous port for the group's ranks: an API server on the same port would fail
 * to bind, or the ranks would rendezvous with it.
 */
export function checkRendezvousPort(v: Validator, port: number, launch: MultiNodeLaunch): void {
  if (port === launch.rendezvousPort || launch.leaderPorts?.includes(port))
    v.fail('port', `must not be ${port} with nodes > 1: the leader's engine binds it for the group's ranks`, port);
}

/** What the serving practice hands the group: the leader's pod and a way to compose another one. */
export interface GroupEmission {
  readonly v: Validator;
  readonly who: string;
  readonly group: ServingGroup;
  readonly r: GroupInputs;
  /** The leader's pod, composed by the serving practice. */
  readonly leader: PodTemplate;
  /**
   * Composes the same pod with other labels (the workers'), without scrape annotations; a serving worker (the
   * leader's labels) also gets what the Endpoint Picker reads from a serving pod.
   */
  readonly composeWorker: (w: {
    labels: Record<string, string>;
    selector: Record<string, string>;
    serving: boolean;
  }) => PodTemplate;
  readonly guaranteedQos: boolean;
}

type WritableContainer = { -readonly [K in keyof k8s.Container]: k8s.Container[K] };

/**
 * Emits the LeaderWorkerSet of a multi-node serving replica set.
 *
 * Drain: the leader takes preStop + drain as a single pod does, and every pod has its grace period
 * (at least preStop + drain + margin). A worker's preStop (group-hold.py) holds while its engine is
 * still connected to the leader's rendezvous port, at most preStop + drain: an evicted worker keeps
 * its rank up while the leader drains the requests that run on it, and a worker deleted after its
 * leader (a rolling update deletes the leader; garbage collection takes the workers once it is
 * gone) stops at once. Serving workers (`workersServe`) drain their own requests as the leader does.
 */
export function leaderWorkerSet(scope: Construct, e: GroupEmission): ApiObject {
  const { group, r } = e;
  const { launch } = group;
  const rendezvous = {
    nodes: group.nodes,
    leaderAddress: `$(${LWS_ENV.leaderAddress})`,
    rank: `$(${LWS_ENV.workerIndex})`,
    podIp: `$(${POD_IP_VARIABLE})`,
  };
  // Appended after the escaped args: the kubelet must expand these references.
  const groupArgs = launch.groupArgs(rendezvous);
  const leaderMain = e.leader.main as WritableContainer;
  leaderMain.args = [...(leaderMain.args ?? []), ...groupArgs, ...(launch.leaderArgs?.(rendezvous) ?? [])];
  if (launch.leaderArgs) {
    const env = leaderMain.env as k8s.EnvVar[];
    if (env.some(x => x.name === POD_IP_VARIABLE))
      e.v.fail(
        `env.${POD_IP_VARIABLE}`,
        "is set by the construct on a group's leader: its engine binds the address the workers dial there",
        POD_IP_VARIABLE,
      );
    env.push(POD_IP_ENV);
  }

  const serving = launch.workersServe !== undefined;
  const worker = e.composeWorker(
    serving ? { labels: r.labels, selector: r.selector, serving } : { ...labelSet(workerIdentity(r)), serving },
  );
  const workerMain = worker.main as WritableContainer;
  workerMain.args = [...(workerMain.args ?? []), ...groupArgs, ...launch.workerArgs(rendezvous)];
  if (launch.workersServe) {
    // Every pod ready only while its whole group serves: a rank cannot finish a request without its peers, and its own
    // /health does not see them stop (group-ready.py).
    const command = ['python3', '-c', packagedScript('group-ready.py'), String(launch.workersServe.healthPort)];
    for (const main of [leaderMain, workerMain]) {
      const probe: { -readonly [K in keyof k8s.Probe]: k8s.Probe[K] } = { ...main.readinessProbe };
      delete probe.httpGet;
      main.readinessProbe = { ...probe, exec: { command } };
    }
  } else {
    // No API: no port, no probes (a worker's /health, where it has one, says nothing about the
    // group). A rank that dies exits, and the group is recreated (RecreateGroupOnPodRestart).
    delete workerMain.ports;
    delete workerMain.startupProbe;
    delete workerMain.readinessProbe;
    delete workerMain.livenessProbe;
    const workerHold = r.termination.preStopSeconds + r.termination.drainSeconds;
    workerMain.lifecycle = {
      preStop: {
        exec: {
          command: [
            'python3',
            '-c',
            packagedScript('group-hold.py'),
            String(launch.rendezvousPort),
            String(workerHold),
          ],
        },
      },
    };
  }
  // One pod of the set per node: a group split over fewer nodes than pods would send NCCL between
  // two pods of one node over the network, and a second group's pod on a node halves its GPUs' links.
  for (const t of [e.leader, worker]) onePodPerNode(t, groupPodSelector(r));
  addPodValidation(scope, worker, e.guaranteedQos, `${e.who} (workers)`);

  const claim = r.cache.claimTemplate;
  const object = new ManifestObject(scope, 'Resource', LEADER_WORKER_SET, {
    metadata: {
      name: group.name,
      labels: { ...r.labels, ...(group.queueName ? { [KUEUE_QUEUE_LABEL]: group.queueName } : {}) },
      // The controller copies it onto the group's pods, where LWS's pod webhook adds a required pod
      // affinity to the group's own key and an anti-affinity to every other group's, both on this
      // topology key (pkg/webhooks/pod_webhook.go SetExclusiveAffinities, v0.10.0).
      ...(group.exclusiveTopology
        ? { annotations: { [LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION]: group.exclusiveTopology } }
        : {}),
    },
    spec: {
      // Autoscaled: no replicas field (groups), so an apply never resets what the autoscaler chose.
      ...(r.replicas !== undefined ? { replicas: r.replicas } : {}),
      // Workers are created with the leader, so the group loads in parallel; the leader's startup
      // probe waits for the whole group (its engine serves only once every rank has joined).
      startupPolicy: lws.LeaderWorkerSetSpecStartupPolicy.LEADER_CREATED,
      // Without surge, one group out at a time: a surge group needs nodes x gpusPerReplica more GPUs,
      // which a full pool lacks. With surge, none out until the new groups serve (as the
      // Deployment's maxSurge 1 / maxUnavailable 0).
      rolloutStrategy: {
        type: lws.LeaderWorkerSetSpecRolloutStrategyType.ROLLING_UPDATE,
        rollingUpdateConfiguration: {
          maxUnavailable: lws.LeaderWorkerSetSpecRolloutStrategyRollingUpdateConfigurationMaxUnavailable.fromNumber(
            group.surge > 0 ? 0 : 1,
          ),
          maxSurge: lws.LeaderWorkerSetSpecRolloutStrategyRollingUpdateConfigurationMaxSurge.fromNumber(group.surge),
        },
      },
      leaderWorkerTemplate: {
        size: group.nodes,
        // A rank that fails leaves the others hung in a collective: restart the group as one.
        restartPolicy: lws.LeaderWorkerSetSpecLeaderWorkerTemplateRestartPolicy.RECREATE_GROUP_ON_POD_RESTART,
        leaderTemplate: e.leader.toTemplate(),
        workerTemplate: worker.toTemplate(),
        ...(claim
          ? {
              volumeClaimTemplates: [{ ...claim, metadata: { ...claim.metadata, labels: r.labels } }],
              // LWS gives each worker StatefulSet this policy, and that StatefulSet is owned by its
              // leader pod: deleted whenever the group is recreated or rolled. `Delete` would drop the
              // workers' claims then (a full download each time, while the leader's claim stays warm);
              // `Retain` lets the recreated StatefulSet adopt them by name. Scale-down deletes the
              // leaders' claims; the removed groups' worker claims stay (docs/serving.md).
              persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Delete' },
            }
          : {}),
      },
    },
  });
  return object;
}

const scripts = new Map<string, string>();

/** A script that ships beside this file (group-hold.py, group-ready.py), read once. */
function packagedScript(name: string): string {
  let text = scripts.get(name);
  if (text === undefined) scripts.set(name, (text = fs.readFileSync(path.join(__dirname, name), 'utf8')));
  return text;
}

/** A required anti-affinity term: no two pods of the set on one node. */
function onePodPerNode(template: PodTemplate, selector: Record<string, string>): void {
  // The template stays mutable until synthesis (pod-template.ts); PodSpec's typings are readonly.
  const spec = template.spec as { affinity?: k8s.Affinity };
  const affinity = spec.affinity ?? {};
  const anti = affinity.podAntiAffinity;
  spec.affinity = {
    ...affinity,
    podAntiAffinity: {
      ...anti,
      requiredDuringSchedulingIgnoredDuringExecution: [
        ...(anti?.requiredDuringSchedulingIgnoredDuringExecution ?? []),
        { labelSelector: { matchLabels: selector }, topologyKey: 'kubernetes.io/hostname' },
      ],
    },
  };
}

/**
 * Every pod of the set, leaders and workers: what the group's one PDB selects. Evicting any pod
 * recreates its group, so one budget over all of them (maxUnavailable 1) lets a drain take one
 * group at a time; a budget per role would let it take a leader of one group and a worker of
 * another at once (and the eviction API refuses a pod that two budgets select).
 */
export function groupPodSelector(r: Pick<GroupInputs, 'labels' | 'name'>): Record<string, string> {
  return instanceSelector(workerIdentity(r));
}

/** The workers' identity: the leaders' name and instance, another component. */
function workerIdentity(r: Pick<GroupInputs, 'labels' | 'name'>): WorkloadIdentity {
  return { name: r.labels[LABEL_NAME] ?? r.name, instance: r.name, component: WORKER_COMPONENT };
}

/**
 * The NetworkPolicy of the workers, and the peers the leaders' policy admits on every port: the
 * ranks of a group connect to each other (the engine's rendezvous on the leader, NCCL both ways) on
 * ports the engines choose, so every pod of the set admits every other on all ports. Workers serve
 * no clients and no metrics, unless they serve (`workersServe`): then the serving policy is theirs
 * too, and there is no policy of their own. Undefined with `NetworkAccess.unrestricted()`.
 */
export function groupNetworkPolicy(
  scope: Construct,
  v: Validator,
  access: NetworkAccess | undefined,
  r: Pick<GroupInputs, 'labels' | 'name' | 'selector'>,
  group: ServingGroup,
  /** Pods the workers admit besides their group (the other pool of a disaggregated service). */
  peers: k8s.NetworkPolicyPeer[] = [],
): { workers?: ApiObject; leaderPeers: k8s.NetworkPolicyPeer[] } {
  // Serving workers are the leaders' kind of pod, under the serving policy: every pod of the set admits every other.
  if (group.launch.workersServe) return { leaderPeers: [{ podSelector: { matchLabels: r.selector } }] };
  const worker = workerIdentity(r);
  const leaderPeers = [{ podSelector: { matchLabels: selectorLabels(worker) } }];
  const workers = workloadNetworkPolicy(scope, v, access, {
    identity: worker,
    profile: 'gang',
    peers: [{ podSelector: { matchLabels: r.selector } }, ...peers],
    name: `${r.name}-workers`,
    admitClients: false,
  });
  return { workers: workers?.object, leaderPeers };
}

/** The autoscaler's target for a group: the LeaderWorkerSet's scale subresource counts groups. */
export function groupScaleTarget(group: ServingGroup): { apiVersion: string; kind: string; name: string } {
  return { ...LEADER_WORKER_SET_GVK, name: group.name };
}
