import { App, Chart, ChartProps, Duration, Size } from 'cdk8s';
import { Construct } from 'constructs';
import { GpuTrainingStatefulSet, Reload, RotatingGpuSecret, SecretRotationMonitoring } from '../src';

/**
 * Seed 004 after the fix: GPU-provider credentials (48 h lifetime) rotate every 12 h into a Secret
 * that the manifests create empty, so one skipped run still leaves a valid credential; the
 * training pods mount the whole directory read-only, and a driver sidecar re-reads the credential
 * after each kubelet update, without restarting the job.
 */
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
    const creds = new RotatingGpuSecret(this, 'creds', {
      name: 'gpu-credentials',
      rotation: {
        image: 'myorg/gpu-cred-rotator:1.4.2',
        command: ['/rotate'],
        every: Duration.hours(12),
        credentialTtl: Duration.hours(48),
      },
    });
    creds.mountInto(trainer, {
      path: '/etc/gpu',
      onRotation: Reload.exec(['/usr/local/bin/gpu-driver', '--reload-credentials', '/etc/gpu/credentials.json'], {
        image: 'myorg/gpu-driver:2.1.0',
      }),
    });
    // The seed's stale credentials: alerts when the credential nears its 48 h lifetime.
    new SecretRotationMonitoring(this, 'monitoring', creds);
  }
}

export function addSecrets(app: App): SecretsChart {
  return new SecretsChart(app, 'gpu-credentials');
}
