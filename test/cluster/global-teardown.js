'use strict';
/**
 * Stops the control plane if Jest's global setup started it (a developer's `cluster:up` stays up), and removes the
 * run's temporary directory.
 */
const fs = require('fs');
const cluster = require('./cluster');

module.exports = async () => {
  if (globalThis.__cdk8sGpuClusterStarted) cluster.down();
  if (globalThis.__cdk8sGpuTmp) fs.rmSync(globalThis.__cdk8sGpuTmp, { recursive: true, force: true });
};
