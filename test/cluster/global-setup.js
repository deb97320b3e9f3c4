'use strict';
/**
 * Jest's global setup: the real control plane (cluster.js) for the tests that apply the library's
 * output to an API server. It is built when missing and started unless it already runs (a developer's
 * `npm run cluster:up`), and the tests find it through CDK8S_GPU_CLUSTER_RUNS. Where it cannot be had
 * (no Go, or CDK8S_GPU_CLUSTER=off for a quick run), CDK8S_GPU_CLUSTER_MISSING says why, and each
 * cluster test says so loudly, failing in CI (test/cluster/kube.ts describeCluster).
 */
const fs = require('fs');
const os = require('os');
const path = require('path');
const cluster = require('./cluster');

module.exports = async () => {
  // Every test app (cdk8s Testing.app) makes a directory under the temp dir, thousands a run: the run's go in one
  // directory of its own, which the teardown removes. The workers, and what they start, inherit TMPDIR.
  globalThis.__cdk8sGpuTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cdk8s-gpu-jest-'));
  process.env.TMPDIR = globalThis.__cdk8sGpuTmp;
  if (process.env.CDK8S_GPU_CLUSTER === 'off') {
    process.env.CDK8S_GPU_CLUSTER_MISSING = 'CDK8S_GPU_CLUSTER=off was set';
    return;
  }
  const missing = cluster.built() ? undefined : cluster.goMissing();
  if (missing) {
    process.env.CDK8S_GPU_CLUSTER_MISSING = missing;
    return;
  }
  const wasRunning = await cluster.running();
  try {
    await cluster.up();
  } catch (e) {
    // Jest runs no teardown after a failed setup: the planes that did start would outlive the run.
    if (!wasRunning) cluster.down();
    throw e;
  }
  process.env.CDK8S_GPU_CLUSTER_RUNS = cluster.RUNS;
  // Jest's teardown runs in this process: only what this setup started is stopped there.
  globalThis.__cdk8sGpuClusterStarted = !wasRunning;
};
