// Package helm holds the gateway's Helm chart (gateway/) and its test: the chart rendered with
// the Helm SDK, every document strictly decoded into the Kubernetes API types.
package helm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// render renders the chart with values (YAML) over its defaults and strictly decodes every
// document into its Kubernetes type, keyed "Kind/name".
func render(t *testing.T, values string) (map[string]any, error) {
	t.Helper()
	chart, err := loader.Load("gateway")
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31"}
	rv, err := chartutil.ToRenderValues(chart, vals, chartutil.ReleaseOptions{Name: "gw", Namespace: "ai", IsInstall: true}, caps)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(chart, rv)
	if err != nil {
		return nil, err
	}
	objects := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for _, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			obj, key, err := decode([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			if _, dup := objects[key]; dup {
				t.Fatalf("%s rendered twice", key)
			}
			objects[key] = obj
		}
	}
	return objects, nil
}

// decode reads the kind, then the whole document into that kind's type, refusing any field
// the type does not have.
func decode(doc []byte) (any, string, error) {
	var tm struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, "", err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "v1 ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &monitoringv1.ServiceMonitor{}
	case "networking.k8s.io/v1 Ingress":
		obj = &networkingv1.Ingress{}
	case "gateway.networking.k8s.io/v1 HTTPRoute":
		obj = &gatewayv1.HTTPRoute{}
	default:
		return nil, "", fmt.Errorf("unexpected kind %s %s", tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, "", fmt.Errorf("strict decode of %s: %w", tm.Kind, err)
	}
	return obj, tm.Kind + "/" + tm.Metadata.Name, nil
}

func mustRender(t *testing.T, values string) map[string]any {
	t.Helper()
	objs, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func env(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

func TestDefaultsRenderTheGatewayOnly(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, "")
	want := []string{"Deployment/gw-gateway", "PodDisruptionBudget/gw-gateway", "Service/gw-gateway", "Service/gw-gateway-admin", "ServiceAccount/gw-gateway"}
	if got := slices.Sorted(maps.Keys(objs)); !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	d := objs["Deployment/gw-gateway"].(*appsv1.Deployment)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	e := env(c)
	for name, value := range map[string]string{
		"GATEWAY_HTTP_ADDR": "0.0.0.0:8080", "GATEWAY_GRPC_ADDR": "0.0.0.0:9090", "GATEWAY_METRICS_ADDR": "0.0.0.0:9464",
		"GATEWAY_DRAIN_TIMEOUT": "30s", "GATEWAY_LOG_LEVEL": "info",
	} {
		if e[name].Value != value {
			t.Errorf("%s = %q, want %q", name, e[name].Value, value)
		}
	}
	// Secrets only by reference.
	for _, name := range []string{"DATABASE_URL", "GATEWAY_ADMIN_TOKEN"} {
		if v := e[name]; v.Value != "" || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s is not read from a Secret: %+v", name, v)
		}
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "gateway-providers" {
		t.Errorf("provider credentials envFrom %+v", c.EnvFrom)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %+v, want GET /readyz", p)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe %+v, want GET /healthz", p)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds != 5 {
		t.Errorf("preStop %+v, want a 5 s pause", c.Lifecycle)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g <= 30+5 {
		t.Errorf("termination grace %v, want above drain (30 s) plus the preStop pause (5 s)", g)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container security context %+v, want non-root 65532, read-only root, no privilege escalation, no capabilities", sc)
	}
	if len(c.VolumeMounts) == 0 || c.VolumeMounts[0].MountPath != "/tmp" {
		t.Errorf("volume mounts %+v, want a writable /tmp for spooled uploads", c.VolumeMounts)
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *d.Spec.Replicas)
	}
	// Each replica's share of a key's limits follows the live replicas in the database; a
	// fixed count would be wrong whenever the autoscaler or a rollout changes the replicas.
	if e, ok := env(c)["GATEWAY_REPLICAS"]; ok {
		t.Errorf("GATEWAY_REPLICAS set (%+v): the replicas count themselves", e)
	}
	if got := servicePorts(objs["Service/gw-gateway"].(*corev1.Service)); !maps.Equal(got, map[string]int32{"http": 8080, "metrics": 9464}) {
		t.Errorf("public service ports %v", got)
	}
	if got := servicePorts(objs["Service/gw-gateway-admin"].(*corev1.Service)); !maps.Equal(got, map[string]int32{"admin": 8081, "grpc": 9090}) {
		t.Errorf("admin service ports %v", got)
	}
}

// servicePorts maps a Service's port names to their ports, after checking that each one
// targets the container port of its own name.
func servicePorts(svc *corev1.Service) map[string]int32 {
	ports := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.String() != p.Name {
			return map[string]int32{"target of " + p.Name + ": " + p.TargetPort.String(): p.Port}
		}
		ports[p.Name] = p.Port
	}
	return ports
}

// Issue 30: behind an ingress the admin API must not share the client's Service. The admin
// HTTP routes get a listener of their own (GATEWAY_ADMIN_HTTP_ADDR) on a port that only the
// admin Service, a ClusterIP, carries; so does gRPC, which serves the admin service too. The
// public Service, which an ingress points at, reaches neither, and the bot uses the admin one.
func TestAdminAPIIsOffThePublicService(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		values         string
		adminAddr      string           // GATEWAY_ADMIN_HTTP_ADDR; "" = unset
		containerPorts []string         // the gateway container's named ports
		adminService   map[string]int32 // the admin Service's ports
	}{
		{"admin token set (the default)", "", "0.0.0.0:8081",
			[]string{"http", "admin", "grpc", "metrics"}, map[string]int32{"admin": 8081, "grpc": 9090}},
		{"another admin port", "ports: {admin: 7000}\nbot: {enabled: true}", "0.0.0.0:7000",
			[]string{"http", "admin", "grpc", "metrics"}, map[string]int32{"admin": 7000, "grpc": 9090}},
		{"admin API off", `admin: {secretName: ""}`, "",
			[]string{"http", "grpc", "metrics"}, map[string]int32{"grpc": 9090}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs := mustRender(t, tt.values)
			d := objs["Deployment/gw-gateway"].(*appsv1.Deployment)
			c := d.Spec.Template.Spec.Containers[0]
			if got := env(c)["GATEWAY_ADMIN_HTTP_ADDR"]; got.Value != tt.adminAddr {
				t.Errorf("GATEWAY_ADMIN_HTTP_ADDR = %q, want %q", got.Value, tt.adminAddr)
			}
			var names []string
			for _, p := range c.Ports {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, tt.containerPorts) {
				t.Errorf("container ports %v, want %v", names, tt.containerPorts)
			}
			public := objs["Service/gw-gateway"].(*corev1.Service)
			if got := servicePorts(public); !maps.Equal(got, map[string]int32{"http": 8080, "metrics": 9464}) {
				t.Errorf("public service ports %v, want http and metrics only", got)
			}
			admin, ok := objs["Service/gw-gateway-admin"].(*corev1.Service)
			if !ok {
				t.Fatal("no admin Service")
			}
			if got := servicePorts(admin); !maps.Equal(got, tt.adminService) {
				t.Errorf("admin service ports %v, want %v", got, tt.adminService)
			}
			if admin.Spec.Type != corev1.ServiceTypeClusterIP || !maps.Equal(admin.Spec.Selector, public.Spec.Selector) {
				t.Errorf("admin service type %s selector %v, want a ClusterIP over the gateway pods %v", admin.Spec.Type, admin.Spec.Selector, public.Spec.Selector)
			}
			// The ServiceMonitor selects Services by the gateway's labels: not the admin one.
			if admin.Labels["app.kubernetes.io/component"] == public.Labels["app.kubernetes.io/component"] {
				t.Errorf("admin service component label %q is the public one's", admin.Labels["app.kubernetes.io/component"])
			}
			if bot, ok := objs["Deployment/gw-gateway-bot"].(*appsv1.Deployment); ok {
				if got := env(bot.Spec.Template.Spec.Containers[0])["GATEWAY_ADMIN_ADDR"].Value; got != "gw-gateway-admin:9090" {
					t.Errorf("bot GATEWAY_ADMIN_ADDR %q, want the admin Service", got)
				}
			}
		})
	}
}

func TestEverythingOn(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, `
autoscaling: {enabled: true, minReplicas: 3, maxReplicas: 9}
serviceMonitor: {enabled: true, labels: {release: prom}}
migrations: {job: true}
catalog: {configMap: gw-catalog}
otlp: {endpoint: "http://otel-collector:4318"}
bot: {enabled: true, operators: "42", keyLimits: "max_requests_per_second=5", paymentProviderToken: {secretName: gw-pay, secretKey: t}}
terminationGracePeriodSeconds: 90
`)
	for _, k := range []string{"HorizontalPodAutoscaler/gw-gateway", "ServiceMonitor/gw-gateway", "Job/gw-gateway-migrate", "Deployment/gw-gateway-bot"} {
		if objs[k] == nil {
			t.Errorf("%s not rendered", k)
		}
	}
	d := objs["Deployment/gw-gateway"].(*appsv1.Deployment)
	if d.Spec.Replicas != nil {
		t.Error("replicas set although the autoscaler owns them")
	}
	if g := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 90 {
		t.Errorf("grace %d, want the configured 90", g)
	}
	e := env(d.Spec.Template.Spec.Containers[0])
	if e["GATEWAY_CATALOG"].Value != "/etc/gateway/catalog/catalog.yaml" || e["OTEL_EXPORTER_OTLP_ENDPOINT"].Value != "http://otel-collector:4318" {
		t.Errorf("catalog/OTLP env %+v %+v", e["GATEWAY_CATALOG"], e["OTEL_EXPORTER_OTLP_ENDPOINT"])
	}
	bot := objs["Deployment/gw-gateway-bot"].(*appsv1.Deployment)
	bc := bot.Spec.Template.Spec.Containers[0]
	if *bot.Spec.Replicas != 1 || bot.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || !slices.Equal(bc.Args, []string{"bot"}) {
		t.Errorf("bot: replicas %d, strategy %s, args %v; want one replica, Recreate, bot", *bot.Spec.Replicas, bot.Spec.Strategy.Type, bc.Args)
	}
	be := env(bc)
	if be["GATEWAY_ADMIN_ADDR"].Value != "gw-gateway-admin:9090" || be["GATEWAY_BOT_OPERATORS"].Value != "42" ||
		be["GATEWAY_BOT_KEY_LIMITS"].Value != "max_requests_per_second=5" {
		t.Errorf("bot env %+v", be)
	}
	for _, name := range []string{"TELEGRAM_BOT_TOKEN", "GATEWAY_ADMIN_TOKEN", "TELEGRAM_PAYMENT_PROVIDER_TOKEN"} {
		if v := be[name]; v.Value != "" || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil {
			t.Errorf("bot %s is not read from a Secret: %+v", name, v)
		}
	}
	if _, ok := be["DATABASE_URL"]; ok {
		t.Error("the bot holds a database connection string")
	}
	if sel := bot.Spec.Selector.MatchLabels["app.kubernetes.io/component"]; sel != "bot" {
		t.Errorf("bot selector component %q: the gateway's Service would send it traffic", sel)
	}
	job := objs["Job/gw-gateway-migrate"].(*batchv1.Job)
	if !slices.Equal(job.Spec.Template.Spec.Containers[0].Args, []string{"migrate"}) || job.Annotations["helm.sh/hook"] != "pre-install,pre-upgrade" {
		t.Errorf("migration job args %v, hook %q", job.Spec.Template.Spec.Containers[0].Args, job.Annotations["helm.sh/hook"])
	}
	sm := objs["ServiceMonitor/gw-gateway"].(*monitoringv1.ServiceMonitor)
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" || sm.Labels["release"] != "prom" {
		t.Errorf("service monitor %+v", sm.Spec)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	for name, values := range map[string]string{
		"grace not above drain and pause": "terminationGracePeriodSeconds: 35",
		"bot without the admin token":     "bot: {enabled: true}\nadmin: {secretName: \"\"}",
		"no database secret":              "database: {secretName: \"\"}",
		"the old adminHTTPAddr value":     "adminHTTPAddr: 0.0.0.0:8081",
	} {
		if _, err := render(t, values); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

// The decoding is strict: a field the type lacks fails (the check the chart's documents pass).
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	doc := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: 1, replica: 2}\n"
	if _, _, err := decode([]byte(doc)); err == nil {
		t.Error("a Deployment with an unknown field decoded")
	}
}
