// Names that say "GPU", shared by the constructs and the guard (which loads nothing heavier).

/** Extended resources that are GPUs: NVIDIA's, AMD's and Intel's device plugins, and MIG slices. */
export const GPU_RESOURCE_PATTERN = /^(nvidia\.com\/(gpu|mig-.+)|amd\.com\/gpu|gpu\.intel\.com\/.+)$/;

/** The DeviceClass of MIG slices that NVIDIA's DRA driver installs (deviceclass-mig.yaml). */
export const MIG_DEVICE_CLASS = 'mig.nvidia.com';
