// Facts of LeaderWorkerSet (kubernetes-sigs/lws v0.10.0, api/leaderworkerset/v1/leaderworkerset_types.go)
// that both the serving constructs and the guard's plan read.

/** 1:1 exclusive placement of each group in one domain of a topology key (node label). */
export const LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION = 'leaderworkerset.sigs.k8s.io/exclusive-topology';

/** The same for each subgroup; needs `subGroupPolicy`. */
export const LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION = 'leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology';
