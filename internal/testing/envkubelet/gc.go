package envkubelet

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ownerKey names an owner as an owner reference does, in the dependent's
// namespace.
type ownerKey struct {
	// APIVersion and Kind are the owner's type.
	APIVersion, Kind string
	// Namespace is the dependent's namespace; Name the owner's name.
	Namespace, Name string
}

// owners looks owners up once per pass.
type owners struct {
	// k does the lookups.
	k *Kubelet
	// found holds the owners looked up: nil if absent.
	found map[ownerKey]*unstructured.Unstructured
	// unknown holds owners whose lookup failed (unknown type, API error).
	unknown map[ownerKey]bool
}

// get returns the owner (nil if it does not exist) and whether that is
// known.
func (o *owners) get(ctx context.Context, key ownerKey) (*unstructured.Unstructured, bool) {
	if u, ok := o.found[key]; ok {
		return u, true
	}
	if o.unknown[key] {
		return nil, false
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(key.APIVersion)
	u.SetKind(key.Kind)
	namespaced, err := o.k.c.IsObjectNamespaced(u)
	if err == nil {
		ns := key.Namespace
		if !namespaced {
			ns = ""
		}
		err = o.k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: key.Name}, u)
	}
	switch {
	case apierrors.IsNotFound(err):
		u = nil
	case err != nil:
		o.k.apiErr("get owner "+key.Kind+" "+key.Namespace+"/"+key.Name, err)
		o.unknown[key] = true
		return nil, false
	}
	o.found[key] = u
	return u, true
}

// collectGarbage is a minimal garbage collector over objs (pods,
// services, claims, jobs, secrets and networkpolicies): an object all of
// whose owners are gone (or
// were replaced by an object with another UID) is deleted in the
// background; an owner being deleted with the foregroundDeletion finalizer
// has its dependents deleted (in the background), one with the orphan
// finalizer has its references removed from them, and either loses the
// finalizer once no such dependent is left.
func (k *Kubelet) collectGarbage(ctx context.Context, objs []client.Object) {
	o := &owners{k: k, found: map[ownerKey]*unstructured.Unstructured{}, unknown: map[ownerKey]bool{}}
	blocking := map[types.UID]int{} // dependents that keep an owner's finalizer
	for _, obj := range objs {
		refs := obj.GetOwnerReferences()
		if len(refs) == 0 {
			continue
		}
		live := false
		for _, ref := range refs {
			key := ownerKey{ref.APIVersion, ref.Kind, obj.GetNamespace(), ref.Name}
			u, known := o.get(ctx, key)
			if !known {
				live = true
				continue
			}
			if u == nil || u.GetUID() != ref.UID {
				continue
			}
			live = true
			if u.GetDeletionTimestamp() == nil {
				continue
			}
			switch {
			case controllerutil.ContainsFinalizer(u, metav1.FinalizerOrphanDependents):
				k.deletingOwners[key] = ref.UID
				blocking[ref.UID]++
				k.orphan(ctx, obj, ref.UID)
			case controllerutil.ContainsFinalizer(u, metav1.FinalizerDeleteDependents):
				k.deletingOwners[key] = ref.UID
				if ptr.Deref(ref.BlockOwnerDeletion, false) {
					blocking[ref.UID]++
				}
				if obj.GetDeletionTimestamp() == nil {
					k.deleteDependent(ctx, obj, "its owner "+ref.Kind+" "+ref.Name+" is deleted in the foreground")
				}
			}
		}
		if !live && obj.GetDeletionTimestamp() == nil {
			k.deleteDependent(ctx, obj, "its owners are gone")
		}
	}
	for _, obj := range objs {
		if obj.GetDeletionTimestamp() == nil || !controllerutil.ContainsFinalizer(obj, metav1.FinalizerOrphanDependents) &&
			!controllerutil.ContainsFinalizer(obj, metav1.FinalizerDeleteDependents) {
			continue
		}
		if gvk, err := apiutil.GVKForObject(obj, k.c.Scheme()); err == nil {
			k.deletingOwners[ownerKey{gvk.GroupVersion().String(), gvk.Kind, obj.GetNamespace(), obj.GetName()}] = obj.GetUID()
		}
	}
	for key, uid := range k.deletingOwners {
		if blocking[uid] > 0 {
			continue
		}
		u, known := o.get(ctx, key)
		if !known {
			continue
		}
		if u == nil || u.GetUID() != uid {
			delete(k.deletingOwners, key)
			continue
		}
		orig := u.DeepCopy()
		controllerutil.RemoveFinalizer(u, metav1.FinalizerOrphanDependents)
		controllerutil.RemoveFinalizer(u, metav1.FinalizerDeleteDependents)
		err := k.c.Patch(ctx, u, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		k.apiErr("remove the finalizers of "+key.Kind+" "+key.Namespace+"/"+key.Name, err)
		if err == nil || apierrors.IsNotFound(err) {
			k.log.Info("Garbage collector released an owner", "kind", key.Kind, "name", key.Namespace+"/"+key.Name)
			delete(k.deletingOwners, key)
		}
	}
}

// deleteDependent deletes obj in the background.
func (k *Kubelet) deleteDependent(ctx context.Context, obj client.Object, why string) {
	// The object was listed a moment ago: the resourceVersion precondition
	// makes the deletion fail if it changed since (an owner reference
	// removed meanwhile), as the real collector re-verifies before deleting.
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	err := k.c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &uid, ResourceVersion: &rv})
	what := kindOf(k, obj) + " " + obj.GetNamespace() + "/" + obj.GetName()
	k.apiErr("garbage-collect "+what, err)
	if err == nil {
		k.log.Info("Garbage collector deleted an object", "object", what, "why", why)
	}
}

// orphan removes obj's references to the owner with the given UID.
func (k *Kubelet) orphan(ctx context.Context, obj client.Object, owner types.UID) {
	orig := obj.DeepCopyObject().(client.Object)
	var refs []metav1.OwnerReference
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID != owner {
			refs = append(refs, ref)
		}
	}
	obj.SetOwnerReferences(refs)
	err := k.c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	k.apiErr("orphan "+kindOf(k, obj)+" "+obj.GetNamespace()+"/"+obj.GetName(), err)
}

// kindOf is the object's kind, for logs.
func kindOf(k *Kubelet, obj client.Object) string {
	if gvk, err := apiutil.GVKForObject(obj, k.c.Scheme()); err == nil {
		return gvk.Kind
	}
	return "object"
}
