import { App, Chart, ChartProps, Duration, Size } from 'cdk8s';
import { Construct } from 'constructs';
import {
  GpuTrainingJob,
  GpuTrainingStatefulSet,
  GpuWorkload,
  Reload,
  RotatingGpuSecret,
  SecretRotationMonitoring,
  SecretType,
} from '../src';

/**
 * Seed 004 after the fix: GPU-provider credentials (48 h lifetime) rotate every 12 h into a Secret
 * that the manifests create empty, so one skipped run still leaves a valid credential; the
 * training pods mount the whole directory read-only, and a driver sidecar re-reads the credential
 * after each kubelet update, without restarting the job.
 */
/**
 * Seed 004's credential in a workload: rotated every 12 h with a 48 h lifetime, so one skipped run
 * still leaves a valid credential; the whole directory mounted read-only, the driver's own command
 * reloading it after each kubelet update; alerts when it nears its lifetime.
 */
function rotatedDriverCredential(scope: Construct, name: string, workload: GpuWorkload): void {
  const creds = new RotatingGpuSecret(scope, 'creds', {
    name,
    rotation: {
      image: 'myorg/gpu-cred-rotator:1.4.2',
      command: ['/rotate'],
      every: Duration.hours(12),
      credentialTtl: Duration.hours(48),
    },
  });
  creds.mountInto(workload, {
    path: '/etc/gpu',
    onRotation: Reload.exec(['/usr/local/bin/gpu-driver', '--reload-credentials', '/etc/gpu/credentials.json'], {
      image: 'myorg/gpu-driver:2.1.0',
    }),
  });
  new SecretRotationMonitoring(scope, 'monitoring', creds);
}

export class SecretsChart extends Chart {
  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, props);
    const trainer = new GpuTrainingStatefulSet(this, 'trainer', {
      name: 'llm-trainer',
      image: 'myorg/trainer:2.4.0',
      replicas: 2,
      gpusPerPod: 4,
      args: ['train.py'],
      storage: { size: Size.gibibytes(200) },
    });
    rotatedDriverCredential(this, 'gpu-credentials', trainer);
  }
}

/**
 * Example digests: pin the digest your mirror reports (`crane digest`, `docker buildx imagetools
 * inspect`). The mirror is a private registry holding copies of the public images.
 */
const MIRROR = 'registry.example.internal/mirror';
const BUSYBOX = `${MIRROR}/busybox:1.36.1@sha256:${'1'.repeat(64)}`;
const ROTATOR = `registry.example.internal/platform/cred-rotator@sha256:${'2'.repeat(64)}`;
const DRIVER = `registry.example.internal/platform/gpu-driver:2.1.0@sha256:${'3'.repeat(64)}`;
const TRAINER = `registry.example.internal/ml/trainer@sha256:${'4'.repeat(64)}`;

/**
 * A regulated cluster's version: every image the secrets constructs run comes from a private
 * registry, pinned by digest (the rotators, and the reload sidecar of each mode), and the rotated
 * credentials include a registry credential (kubernetes.io/dockerconfigjson, created by its
 * rotator) and a TLS pair whose two keys the application always sees from the same rotation.
 */
export class PinnedSecretsChart extends Chart {
  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, props);
    const trainer = new GpuTrainingStatefulSet(this, 'trainer', {
      name: 'pinned-trainer',
      image: TRAINER,
      gpusPerPod: 1,
      args: ['train.py'],
    });
    const rotation = { image: ROTATOR, every: Duration.hours(6), credentialTtl: Duration.hours(24) };
    const gpu = new RotatingGpuSecret(this, 'gpu', { name: 'pinned-gpu-credentials', rotation });
    gpu.mountInto(trainer, {
      path: '/etc/gpu',
      onRotation: Reload.exec(['/usr/local/bin/gpu-driver', '--reload-credentials'], { image: DRIVER }),
    });
    const tls = new RotatingGpuSecret(this, 'tls', {
      name: 'pinned-tls',
      type: SecretType.TLS,
      rotation: { ...rotation, args: ['--tls'] },
    });
    tls.mountInto(trainer, { path: '/etc/tls', onRotation: Reload.sync({ image: BUSYBOX }) });
    const registry = new RotatingGpuSecret(this, 'registry', {
      name: 'pinned-registry',
      type: SecretType.DOCKER_CONFIG_JSON,
      rotation: { ...rotation, args: ['--registry'] },
    });
    registry.mountInto(trainer, {
      path: '/etc/registry',
      onRotation: Reload.httpPost('http://localhost:8080/-/reload-registry', { image: BUSYBOX }),
    });
    for (const [id, secret] of [
      ['gpu', gpu],
      ['tls', tls],
      ['registry', registry],
    ] as const) {
      new SecretRotationMonitoring(this, `${id}-monitoring`, secret);
    }
  }
}

/**
 * Seed 004 on the recommended training path: the same rotated credential and driver reload in a
 * GpuTrainingJob. The reload sidecar is a native sidecar (an init container with restartPolicy
 * Always), so the Job's pods still complete when training ends and free their GPUs.
 */
export class SecretsJobChart extends Chart {
  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, props);
    const job = new GpuTrainingJob(this, 'pretrain', {
      name: 'credentials-pretrain',
      image: 'myorg/trainer:2.4.0',
      nodes: 2,
      gpusPerPod: 8,
      args: ['train.py'],
    });
    rotatedDriverCredential(this, 'pretrain-gpu-credentials', job);
  }
}

export function addSecrets(app: App): SecretsChart {
  const chart = new SecretsChart(app, 'gpu-credentials');
  new SecretsJobChart(app, 'gpu-credentials-job');
  new PinnedSecretsChart(app, 'pinned-secrets');
  return chart;
}
