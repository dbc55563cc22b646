// Package controllers holds the Summa operator's reconcilers: the
// SummaIndex controller that owns each index's engine pod, data volume,
// Service and doctor Jobs.
//
// This file carries the operator's RBAC markers; `make manifests` turns
// them into config/rbac/role.yaml. They grant the least the operator needs:
//
//   - summaindexes, their status and finalizers: the resource it reconciles;
//   - summaindexbackups and their status: it runs each backup, creates the
//     scheduled ones and deletes those beyond spec.backup.keep (patch to
//     record the prune that followed one);
//   - pods: it creates and deletes the engine pod itself (no StatefulSet),
//     patches it (grace and labels) and watches it;
//   - persistentvolumeclaims: the data volume and the doctor's backup copy;
//     update and patch to grow the volume and to keep its owner reference
//     in line with the reclaim policy;
//   - services: the Service in front of the engine;
//   - jobs: the doctor, volume-copy, restore and backup-prune Jobs;
//   - secrets: the generated credentials and the TLS Secret (create, and
//     update to fill in a missing token or renew the certificate; delete to
//     replace one orphaned by a deleted index of the same name; watched
//     with a label selector), and reading the Secrets spec.access names;
//   - networkpolicies: the engine's and the Jobs' NetworkPolicies (delete
//     when spec.access.networkPolicy is Disabled, patch to adopt one
//     orphaned by a deleted index of the same name);
//   - serviceaccounts (get): whether the ServiceAccount spec.podTemplate
//     names is allowed for pod templates (read from the API server, not
//     watched);
//   - events: one for every lifecycle step;
//   - tokenreviews and subjectaccessreviews (create): the secure metrics
//     endpoint authenticates and authorizes each scrape with them.
//
// Leader election (coordination.k8s.io leases and its events) has its own
// namespaced Role in config/rbac/leader_election_role.yaml.
package controllers

// +kubebuilder:rbac:groups=summa.dev,resources=summaindexes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=summa.dev,resources=summaindexes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=summa.dev,resources=summaindexes/finalizers,verbs=update
// +kubebuilder:rbac:groups=summa.dev,resources=summaindexbackups,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=summa.dev,resources=summaindexbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;delete;update;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
