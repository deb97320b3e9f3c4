import { describeSidecar } from './sidecar-suite';

// The reload sidecar script under busybox sh, as in the pinned busybox:1.36.1 image (here Debian's
// busybox 1.35, which lacks cksum).
describeSidecar('busybox');
