import { describeSidecar } from './sidecar-suite';

// The reload sidecar script under dash, as in a Debian-based image used with Reload.exec.
describeSidecar('dash');
