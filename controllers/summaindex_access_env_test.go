package controllers

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/pki"
)

// rotationTimeout is the contract's bound on a rotation ("within a
// minute").
const rotationTimeout = time.Minute

// podURL is the engine's base URL at its pod address.
func podURL(name, scheme string) string {
	GinkgoHelper()
	pod, err := enginePodOf(name)
	Expect(err).NotTo(HaveOccurred())
	return scheme + "://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(EnginePort))
}

// rawStatus sends GET path to the engine over HTTPS verified with the
// index's CA, with token unless empty, and returns the status code.
func rawStatus(name, path, token string) (int, error) {
	GinkgoHelper()
	x := getIndex(name)
	hc, err := engineclient.NewHTTPClient(secretOf(x.Status.Access.TLSSecret).Data[summav1.CACertKey], x.ServiceHost(), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, podURL(name, "https")+path, nil)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// servedCertificate is the certificate the engine presents now.
func servedCertificate(name string) (*x509.Certificate, error) {
	GinkgoHelper()
	pod, err := enginePodOf(name)
	Expect(err).NotTo(HaveOccurred())
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(EnginePort)),
		&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only to read what is served
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// engineStops counts the stops of the engine container of a pod.
func engineStops(uid string) int { return len(engineExits(uid)) }

// setCredential writes a new value of one token key of a Secret.
func setCredential(secret, key, value string) {
	GinkgoHelper()
	Eventually(func() error {
		s := secretOf(secret)
		s.Data[key] = []byte(value)
		return k8sClient.Update(ctx, s)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

var _ = Describe("Access control", func() {
	It("creates the credentials, uses the admin token, and the engine refuses a request without one", func() {
		x := createReady("locked", nil)
		Expect(x.Status.Access).NotTo(BeNil())
		Expect(x.Status.Access.CredentialsSecret).To(Equal("locked-credentials"))
		Expect(x.Status.Access.TLSSecret).To(Equal("locked-tls"))
		Expect(x.Status.Access.CertificateNotAfter).NotTo(BeNil())
		Expect(x.Status.Access.CertificateRenewalTime.Before(x.Status.Access.CertificateNotAfter)).To(BeTrue())

		s := secretOf("locked-credentials")
		Expect(metav1.IsControlledBy(s, x)).To(BeTrue())
		Expect(s.Labels).To(HaveKeyWithValue(summav1.LabelManagedBy, summav1.ManagedByValue))
		Expect(s.Labels).To(HaveKeyWithValue(summav1.LabelIndex, "locked"))
		seen := map[string]bool{}
		for _, k := range summav1.TokenKeys {
			raw, err := base64.RawURLEncoding.DecodeString(string(s.Data[k]))
			Expect(err).NotTo(HaveOccurred(), k)
			Expect(raw).To(HaveLen(32), k)
			Expect(seen[string(raw)]).To(BeFalse(), "two scopes share a token")
			seen[string(raw)] = true
		}
		tlsSecret := secretOf("locked-tls")
		Expect(metav1.IsControlledBy(tlsSecret, x)).To(BeTrue())
		Expect(tlsSecret.Data).NotTo(HaveKey(summav1.CAKeyKey), "the CA key is kept apart from what clients read")
		caSecret := secretOf("locked-ca")
		Expect(metav1.IsControlledBy(caSecret, x)).To(BeTrue())
		Expect(caSecret.Data).To(HaveKey(summav1.CAKeyKey))
		Expect(caSecret.Data).To(HaveLen(1))

		pod, err := enginePodOf("locked")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Annotations).To(HaveKey(AnnotationAccessHash))
		Expect(kubelet.VolumeDir(specNamespace, pod.Name, tlsVolumeName)).NotTo(BeEmpty())
		Expect(kubelet.VolumeDir(specNamespace, pod.Name, tlsVolumeName) + "/ca.key").NotTo(BeAnExistingFile())

		By("refusing requests without a token, with an unknown one, or of too low a scope")
		Expect(rawStatus("locked", "/v1/indexes", "")).To(Equal(http.StatusUnauthorized))
		Expect(rawStatus("locked", "/v1/indexes", "not-a-token")).To(Equal(http.StatusUnauthorized))
		Expect(rawStatus("locked", "/v1/indexes", string(s.Data[summav1.ReadTokenKey]))).To(Equal(http.StatusOK))
		Expect(rawStatus("locked", "/v1/admin/lifecycle", string(s.Data[summav1.WriteTokenKey]))).To(Equal(http.StatusForbidden))
		Expect(rawStatus("locked", "/readyz", "")).To(Equal(http.StatusOK), "probes stay open")
		resp, err := http.Get(podURL("locked", "http") + "/v1/indexes")
		if err == nil {
			resp.Body.Close()
			Expect(resp.StatusCode).NotTo(BeNumerically("<", 300), "plain HTTP to the TLS port got %s", resp.Status)
		}

		By("status following the engine through the admin token")
		ingest("locked", 0, 40)
		commit("locked")
		Eventually(func() int64 { return getIndex("locked").Status.Documents }).
			WithTimeout(time.Minute).WithPolling(poll).Should(BeEquivalentTo(40))
	})

	It("rotates a token without restarting the engine: the new value is the only valid one within a minute", func() {
		x := createReady("rotate", nil)
		pod, err := enginePodOf("rotate")
		Expect(err).NotTo(HaveOccurred())
		uid, hash := pod.UID, pod.Annotations[AnnotationAccessHash]
		old := string(secretOf("rotate-credentials").Data[summav1.AdminTokenKey])
		Expect(rawStatus("rotate", "/v1/admin/lifecycle", old)).To(Equal(http.StatusOK))
		fresh, err := newToken()
		Expect(err).NotTo(HaveOccurred())

		setCredential(x.Status.Access.CredentialsSecret, summav1.AdminTokenKey, fresh)
		Eventually(func(g Gomega) {
			g.Expect(rawStatus("rotate", "/v1/admin/lifecycle", fresh)).To(Equal(http.StatusOK))
			g.Expect(rawStatus("rotate", "/v1/admin/lifecycle", old)).To(Equal(http.StatusUnauthorized))
		}).WithTimeout(rotationTimeout).WithPolling(poll).Should(Succeed())

		pod, err = enginePodOf("rotate")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.UID).To(Equal(uid), "no restart")
		Expect(engineStops(string(uid))).To(BeZero(), "the engine container never stopped")
		Expect(pod.Annotations[AnnotationAccessHash]).NotTo(Equal(hash))
		Expect(eventReasons("rotate")).To(ContainElement("AccessUpdated"))
		Expect(secretOf("rotate-credentials").Data[summav1.AdminTokenKey]).To(BeEquivalentTo(fresh), "a rotated value is never overwritten")

		By("the operator going on with the new token")
		ingest("rotate", 0, 25)
		commit("rotate")
		Eventually(func(g Gomega) {
			x := getIndex("rotate")
			g.Expect(x.Status.Documents).To(BeEquivalentTo(25))
			g.Expect(x.IsReady()).To(BeTrue())
			g.Expect(x.IsConditionTrue(summav1.ConditionDegraded)).To(BeFalse())
		}).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
	})

	It("verifies the engine with the user's TLS Secret: a wrong CA fails, the right one works", func() {
		right, err := pki.NewCA("cert-manager", 24*time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())
		wrong, err := pki.NewCA("someone else", 24*time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())
		leaf, err := right.Issue([]string{"byo.summa-specs.svc.cluster.local"}, nil, 24*time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "byo-cert", Namespace: specNamespace},
			Type:       corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM,
				summav1.CACertKey: wrong.CertPEM},
		})).To(Succeed())
		Expect(k8sClient.Create(ctx, specIndex("byo", func(x *summav1.SummaIndex) {
			x.Spec.Access.TLS.SecretName = "byo-cert"
		}))).To(Succeed())
		Eventually(func(g Gomega) {
			x := getIndex("byo")
			c := x.GetCondition(summav1.ConditionDegraded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal("EngineUnreachable"))
			g.Expect(c.Message).To(ContainSubstring("certificate"))
			g.Expect(x.IsReady()).To(BeFalse())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		served, err := servedCertificate("byo")
		Expect(err).NotTo(HaveOccurred())
		Expect(served.Raw).To(Equal(mustParse(leaf.CertPEM).Raw), "the engine serves the user's certificate")

		By("trusting the right CA once ca.crt is fixed")
		Eventually(func() error {
			s := secretOf("byo-cert")
			s.Data[summav1.CACertKey] = right.CertPEM
			return k8sClient.Update(ctx, s)
		}).WithTimeout(30 * time.Second).Should(Succeed())
		x := waitReady("byo")
		Expect(x.Status.Access.TLSSecret).To(Equal("byo-cert"))
		Expect(x.Status.Access.CertificateNotAfter.Time).To(BeTemporally("~", leaf.NotAfter, time.Second))
		Expect(x.Status.Access.CertificateRenewalTime).To(BeNil(), "the operator renews only what it issued")
		err = k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "byo-tls"}, &corev1.Secret{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no certificate of the operator's own")
		c, err := engineclient.NewWithOptions(podURL("byo", "https"), engineclient.Options{
			Token:  firstToken(secretOf("byo-credentials").Data[summav1.WriteTokenKey]),
			CACert: right.CertPEM, ServerName: "byo.summa-specs.svc.cluster.local"})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.AddDocuments(ctx, "byo", map[string]any{"id": "1", "body": "served with the user's certificate"})).To(Equal(1))
	})

	It("renews the certificate it issued before it expires, without restarting the engine", func() {
		certificateValidity = 2 * time.Minute
		restartOperator()
		DeferCleanup(func() {
			certificateValidity = 0
			restartOperator()
		})
		createReady("renew", nil)
		first := mustParse(secretOf("renew-tls").Data[summav1.TLSCertKey])
		pod, err := enginePodOf("renew")
		Expect(err).NotTo(HaveOccurred())
		served, err := servedCertificate("renew")
		Expect(err).NotTo(HaveOccurred())
		Expect(served.SerialNumber).To(Equal(first.SerialNumber))

		var renewed *x509.Certificate
		Eventually(func(g Gomega) {
			renewed = mustParse(secretOf("renew-tls").Data[summav1.TLSCertKey])
			g.Expect(renewed.SerialNumber).NotTo(Equal(first.SerialNumber))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(renewed.NotBefore.Before(first.NotAfter)).To(BeTrue(), "renewed before the old one expired")
		Eventually(func(g Gomega) {
			served, err := servedCertificate("renew")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(served.SerialNumber).NotTo(Equal(first.SerialNumber))
			g.Expect(getIndex("renew").IsReady()).To(BeTrue())
		}).WithTimeout(rotationTimeout).WithPolling(poll).Should(Succeed())
		now, err := enginePodOf("renew")
		Expect(err).NotTo(HaveOccurred())
		Expect(now.UID).To(Equal(pod.UID), "no restart")
		Expect(engineStops(string(pod.UID))).To(BeZero())
		Expect(eventReasons("renew")).To(ContainElement("CertificateRenewed"))
	})

	It("serves plain HTTP with tls.mode Disabled, still with tokens", func() {
		x := createReady("plain", func(x *summav1.SummaIndex) { x.Spec.Access.TLS.Mode = summav1.TLSDisabled })
		Expect(x.Status.Access.TLSSecret).To(BeEmpty())
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "plain-tls"}, &corev1.Secret{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		resp, err := http.Get(podURL("plain", "http") + "/v1/indexes")
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		ingest("plain", 0, 3)
	})

	It("keeps NetworkPolicies that admit exactly the contract's peers, and removes them when disabled", func() {
		team := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "search"}}}
		x := createReady("fenced", func(x *summav1.SummaIndex) { x.Spec.Access.AllowFrom = []networkingv1.NetworkPolicyPeer{team} })
		np := &networkingv1.NetworkPolicy{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "fenced"}, np)).To(Succeed())
		Expect(metav1.IsControlledBy(np, x)).To(BeTrue())
		Expect(np.Labels).To(HaveKeyWithValue(summav1.LabelIndex, "fenced"))
		pod, err := enginePodOf("fenced")
		Expect(err).NotTo(HaveOccurred())
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Matches(labels.Set(pod.Labels))).To(BeTrue(), "the policy selects the engine pod")
		Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}))
		Expect(np.Spec.Ingress).To(HaveLen(1))
		rule := np.Spec.Ingress[0]
		Expect(rule.Ports).To(HaveLen(1))
		Expect(rule.Ports[0].Port.IntValue()).To(Equal(EnginePort))
		Expect(rule.From).To(Equal([]networkingv1.NetworkPolicyPeer{
			{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": operatorNamespace}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "summa-operator"}},
			},
			{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{summav1.LabelClient: "fenced"}}},
			team,
		}))

		jobs := &networkingv1.NetworkPolicy{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "fenced.jobs"}, jobs)).To(Succeed())
		Expect(jobs.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
		Expect(jobs.Spec.Ingress).To(BeEmpty())
		Expect(jobs.Spec.Egress).To(BeEmpty())

		By("following spec.access.allowFrom")
		updateIndex("fenced", func(x *summav1.SummaIndex) { x.Spec.Access.AllowFrom = nil })
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "fenced"}, np)).To(Succeed())
			g.Expect(np.Spec.Ingress[0].From).To(HaveLen(2))
		}).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())

		By("deleting both when disabled, without restarting the engine")
		updateIndex("fenced", func(x *summav1.SummaIndex) { x.Spec.Access.NetworkPolicy = summav1.NetworkPolicyDisabled })
		for _, name := range []string{"fenced", "fenced.jobs"} {
			Eventually(func() bool {
				err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, &networkingv1.NetworkPolicy{})
				return apierrors.IsNotFound(err)
			}).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue(), name)
		}
		after, err := enginePodOf("fenced")
		Expect(err).NotTo(HaveOccurred())
		Expect(after.UID).To(Equal(pod.UID))
	})

	It("reports a credentials Secret named in the spec that is missing, and starts once it exists", func() {
		Expect(k8sClient.Create(ctx, specIndex("byo-creds", func(x *summav1.SummaIndex) {
			x.Spec.Access.CredentialsSecret = "team-tokens"
		}))).To(Succeed())
		Eventually(func(g Gomega) {
			c := getIndex("byo-creds").GetCondition(summav1.ConditionDegraded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal("CredentialsSecretMissing"))
			g.Expect(c.Message).To(ContainSubstring("team-tokens"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		_, err := enginePodOf("byo-creds")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no engine without its tokens")
		data := map[string][]byte{}
		for _, k := range summav1.TokenKeys {
			tok, err := newToken()
			Expect(err).NotTo(HaveOccurred())
			data[k] = []byte(tok + "\n")
		}
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-tokens", Namespace: specNamespace}, Data: data})).To(Succeed())
		x := waitReady("byo-creds")
		Expect(x.Status.Access.CredentialsSecret).To(Equal("team-tokens"))
		Expect(x.IsConditionTrue(summav1.ConditionDegraded)).To(BeFalse())
		err = k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "byo-creds-credentials"}, &corev1.Secret{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no generated credentials besides the user's")
		ingest("byo-creds", 0, 2)
	})
})

// mustParse parses the first certificate of a PEM chain.
func mustParse(certPEM []byte) *x509.Certificate {
	GinkgoHelper()
	c, err := pki.ParseCertificate(certPEM)
	Expect(err).NotTo(HaveOccurred())
	return c
}
