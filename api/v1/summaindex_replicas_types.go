package v1

import "strconv"

// Read followers (spec.replicas). The engine pod of an index is its
// leader; each of spec.replicas followers is a pod <name>-r<k> (k =
// 1..replicas) on its own volume <name>-r<k>-data, running
// summa-server --follow against the leader's Service. Service
// <name>-read selects every ready pod of the index; Service <name> stays
// the leader's.

// MaxReplicas bounds spec.replicas.
const MaxReplicas = 16

// Labels of the pods that serve an index.
const (
	// LabelRole is the role of an index's serving pod: RoleLeader or
	// RoleFollower.
	LabelRole = "summa.dev/role"
	// RoleLeader is LabelRole's value on the engine pod (writes and
	// reads).
	RoleLeader = "leader"
	// RoleFollower is LabelRole's value on a read follower.
	RoleFollower = "follower"
	// LabelServing marks (value "true") every pod that answers searches
	// for the index, leader and followers: the read Service and the
	// PodDisruptionBudget select it.
	LabelServing = "summa.dev/serving"
)

// ReplicasStatus is what status shows of the read followers.
type ReplicasStatus struct {
	// Desired is spec.replicas.
	// +optional
	Desired int32 `json:"desired"`
	// Ready counts the followers that are ready and serve a committed
	// generation.
	// +optional
	Ready int32 `json:"ready"`
	// Updated counts the followers at the desired revision, ready and
	// caught up with the leader; the leader restarts for a new revision
	// only once it equals Desired.
	// +optional
	Updated int32 `json:"updated,omitempty"`
	// MaxLagSeconds is the largest replication lag the followers report
	// (engine's replication.lagSeconds); absent when none reports one.
	// +optional
	// +kubebuilder:validation:Type=number
	MaxLagSeconds *float64 `json:"maxLagSeconds,omitempty"`
	// Summary is Ready/Desired, for the Replicas printer column.
	// +optional
	Summary string `json:"summary,omitempty"`
	// Followers lists each follower as its engine reports it.
	// +optional
	// +listType=map
	// +listMapKey=name
	Followers []FollowerStatus `json:"followers,omitempty"`
}

// FollowerStatus is one read follower.
type FollowerStatus struct {
	// Name of the follower's pod.
	Name string `json:"name"`
	// Ready is the pod's readiness.
	// +optional
	Ready bool `json:"ready"`
	// Revision is the pod's revision (summa.dev/revision).
	// +optional
	Revision string `json:"revision,omitempty"`
	// State is the engine's replication state: following, catchingUp or
	// disconnected.
	// +optional
	State string `json:"state,omitempty"`
	// Generation is the generation the follower serves.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// LeaderGeneration is the leader's latest generation the follower
	// knows of.
	// +optional
	LeaderGeneration int64 `json:"leaderGeneration,omitempty"`
	// LagSeconds is the follower's replication lag.
	// +optional
	// +kubebuilder:validation:Type=number
	LagSeconds *float64 `json:"lagSeconds,omitempty"`
}

// EffectiveReplicas is spec.replicas, 0 when unset.
func (x *SummaIndex) EffectiveReplicas() int {
	if x.Spec.Replicas == nil {
		return 0
	}
	return int(*x.Spec.Replicas)
}

// FollowerPodName is the pod of follower k (1-based).
func (x *SummaIndex) FollowerPodName(k int) string { return x.Name + "-r" + strconv.Itoa(k) }

// FollowerClaimName is the volume of follower k (1-based).
func (x *SummaIndex) FollowerClaimName(k int) string { return x.FollowerPodName(k) + "-data" }

// ReadServiceName is the Service over every ready pod of the index.
func (x *SummaIndex) ReadServiceName() string { return x.Name + "-read" }

// HasReadService reports whether the read Service's name is a valid
// Service name (at most 63 characters): with followers the API server
// ensures it; without, an index of a longer name has no read Service.
func (x *SummaIndex) HasReadService() bool { return len(x.ReadServiceName()) <= 63 }

// PodDisruptionBudgetName is the index's PodDisruptionBudget (with
// followers).
func (x *SummaIndex) PodDisruptionBudgetName() string { return x.Name }

// ReadServiceDNSNames are the DNS names of the read Service, shortest
// first, for a cluster domain such as cluster.local.
func (x *SummaIndex) ReadServiceDNSNames(clusterDomain string) []string {
	if !x.HasReadService() {
		return nil
	}
	svc := x.ReadServiceName()
	host := svc + "." + x.Namespace + ".svc"
	names := []string{svc, svc + "." + x.Namespace, host}
	if clusterDomain != "" {
		names = append(names, host+"."+clusterDomain)
	}
	return names
}

// FollowerIndex parses k from a follower pod or volume name of x
// (<name>-r<k> or <name>-r<k>-data); 0 when name is not one.
func (x *SummaIndex) FollowerIndex(name string) int {
	prefix := x.Name + "-r"
	if len(name) <= len(prefix) || name[:len(prefix)] != prefix {
		return 0
	}
	rest := name[len(prefix):]
	if n := len(rest); n > 5 && rest[n-5:] == "-data" {
		rest = rest[:n-5]
	}
	k, err := strconv.Atoi(rest)
	if err != nil || k < 1 || strconv.Itoa(k) != rest {
		return 0
	}
	return k
}
