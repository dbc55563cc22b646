package e2e

import (
	"context"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/testing/s3test"
)

// s3ServiceName is the Service in front of the object store on the host.
const s3ServiceName = "e2e-s3"

var _ = Describe("Backups", func() {
	It("16. backs an index up to a real S3 server, and a new SummaIndex restores every document after the first was deleted with its volume", func() {
		if mode != "local" {
			Skip("the object store runs on the local cluster's host (its node address)")
		}
		// Skipped without bin/s3/weed, failed with SUMMA_REQUIRE_S3=1.
		store := s3test.StartOn(GinkgoT(), nodeIP())
		endpoint := exposeHostS3(store.Port)
		const name, docs = "e2e-backup", 500
		creds := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-store", Namespace: testNamespace},
			StringData: map[string]string{summav1.S3AccessKeyIDKey: s3test.AccessKey, summav1.S3SecretAccessKeyKey: s3test.SecretKey},
		}
		Expect(k8s.Create(ctx, creds)).To(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, creds) })
		backupSpec := func(x *summav1.SummaIndex) {
			x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete
			x.Spec.Backup = &summav1.BackupSpec{S3: summav1.S3Spec{
				Endpoint: endpoint, Bucket: store.Bucket, Prefix: "e2e", CredentialsSecret: creds.Name,
			}}
		}
		createReady(name, backupSpec)
		ingest(name, 0, docs)
		commit(name)
		first := getIndex(name)
		firstVolume := boundVolume(first.DataClaimName())

		By("a SummaIndexBackup completes through the Service name")
		b := &summav1.SummaIndexBackup{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: testNamespace},
			Spec:       summav1.SummaIndexBackupSpec{Index: name},
		}
		start := time.Now()
		Expect(k8s.Create(ctx, b)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			if b.Status.Phase == summav1.BackupPhaseFailed {
				StopTrying("the backup failed: " + b.Status.Message).Now()
			}
			g.Expect(b.Status.Phase).To(Equal(summav1.BackupPhaseCompleted))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		figure("SummaIndexBackup of %d documents to SeaweedFS through Service %s: Completed in %.1fs (%d bytes)",
			docs, s3ServiceName, time.Since(start).Seconds(), b.Status.Bytes)
		Expect(b.Status.BackupID).NotTo(BeEmpty())
		Expect(b.Status.Documents).To(BeNumerically("==", docs))
		Expect(manifests(store, "e2e/"+name+"/backups/")).NotTo(BeEmpty(), "the manifest is in the bucket")
		Eventually(func(g Gomega) {
			g.Expect(getIndex(name).Status.LastBackup).NotTo(BeNil())
			g.Expect(getIndex(name).Status.LastBackup.ID).To(Equal(b.Status.BackupID))
		}).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())

		By("deleting the index with reclaimPolicy Delete: its volume goes")
		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Eventually(func() bool {
			return gone(&summav1.SummaIndex{}, name) && gone(&corev1.PersistentVolumeClaim{}, first.DataClaimName())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())

		By("a new SummaIndex with spec.restore fills a new volume and serves every document")
		start = time.Now()
		createReady(name, func(x *summav1.SummaIndex) {
			backupSpec(x)
			x.Spec.Restore = &summav1.RestoreSpec{BackupID: b.Status.BackupID}
		})
		figure("restore of %d documents (spec.restore: Job, then engine) -> Ready: %.1fs", docs, time.Since(start).Seconds())
		x := getIndex(name)
		Expect(x.UID).NotTo(Equal(first.UID))
		Expect(boundVolume(x.DataClaimName())).NotTo(Equal(firstVolume))
		Expect(x.Status.Restore).NotTo(BeNil())
		Expect(x.Status.Restore.Phase).To(Equal(summav1.RestorePhaseSucceeded))
		Expect(x.Status.Restore.BackupID).To(Equal(b.Status.BackupID))
		expectAll(name, 0, docs)
		Expect(committedIDs(name)).To(HaveLen(docs))
		Expect(k8s.Delete(ctx, x)).To(Succeed())
	})
})

// nodeIP is the local cluster node's InternalIP: an address of this host
// (the summa-node bridge) that pods reach.
func nodeIP() string {
	GinkgoHelper()
	nodes := &corev1.NodeList{}
	Expect(k8s.List(ctx, nodes)).To(Succeed())
	Expect(nodes.Items).NotTo(BeEmpty())
	for _, a := range nodes.Items[0].Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	Fail("the node has no InternalIP")
	return ""
}

// exposeHostS3 makes Service e2e-s3 (selector-less) with an EndpointSlice
// naming the node address and port, as a cluster fronts an outside object
// store, and returns the endpoint URL pods use: the Service's name.
func exposeHostS3(port int) string {
	GinkgoHelper()
	p := int32(port)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s3ServiceName, Namespace: testNamespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "s3", Port: p, Protocol: corev1.ProtocolTCP,
		}}},
	}
	eps := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: s3ServiceName + "-host", Namespace: testNamespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: s3ServiceName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{nodeIP()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("s3"), Port: &p, Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, o := range []client.Object{svc, eps} {
		_ = k8s.Delete(ctx, o) // a leftover of an interrupted run
		Eventually(func() error { return k8s.Create(ctx, o) }).WithTimeout(30 * time.Second).Should(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, o) })
	}
	return "http://" + s3ServiceName + "." + testNamespace + ".svc:" + strconv.Itoa(port)
}

// boundVolume is the PersistentVolume a claim is bound to.
func boundVolume(claim string) string {
	GinkgoHelper()
	pvc := &corev1.PersistentVolumeClaim{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: claim}, pvc)).To(Succeed())
	Expect(pvc.Spec.VolumeName).NotTo(BeEmpty())
	return pvc.Spec.VolumeName
}

// manifests lists the objects under prefix in the store's bucket.
func manifests(store *s3test.Server, prefix string) []string {
	GinkgoHelper()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var keys []string
	for o := range store.Client.ListObjects(cctx, store.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		Expect(o.Err).NotTo(HaveOccurred())
		keys = append(keys, o.Key)
	}
	return keys
}
