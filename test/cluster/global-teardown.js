'use strict';
/** Stops the control plane if Jest's global setup started it (a developer's `cluster:up` stays up). */
const cluster = require('./cluster');

module.exports = async () => {
  if (globalThis.__cdk8sGpuClusterStarted) cluster.down();
};
