package helm

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ingressBackends lists an Ingress's rules as "host path pathType -> service:port" lines.
func ingressBackends(ing *networkingv1.Ingress) []string {
	var out []string
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			out = append(out, r.Host+" (no http)")
			continue
		}
		for _, p := range r.HTTP.Paths {
			line := r.Host + " " + p.Path + " "
			if p.PathType != nil {
				line += string(*p.PathType)
			}
			if s := p.Backend.Service; s != nil {
				line += " -> " + s.Name + ":" + s.Port.Name // by name: it follows ports.http
				if s.Port.Number != 0 {
					line += strconv.Itoa(int(s.Port.Number))
				}
			} else {
				line += " -> not a Service"
			}
			out = append(out, line)
		}
	}
	return out
}

// routeBackends lists an HTTPRoute's rules as "match -> kind/name:port" lines.
func routeBackends(r *gatewayv1.HTTPRoute) []string {
	var out []string
	for _, rule := range r.Spec.Rules {
		var matches []string
		for _, m := range rule.Matches {
			if m.Path != nil && m.Path.Type != nil && m.Path.Value != nil {
				matches = append(matches, string(*m.Path.Type)+" "+*m.Path.Value)
			}
		}
		for _, b := range rule.BackendRefs {
			kind, port := "Service", "none"
			if b.Kind != nil {
				kind = string(*b.Kind)
			}
			if b.Group != nil && *b.Group != "" {
				kind = string(*b.Group) + "/" + kind
			}
			if b.Port != nil {
				port = strconv.Itoa(int(*b.Port))
			}
			out = append(out, strings.Join(matches, ",")+" -> "+kind+"/"+string(b.Name)+":"+port)
		}
	}
	return out
}

// Issue 38: an optional Ingress and an optional Gateway API HTTPRoute, both off by default,
// both to the public Service's http port only: the admin Service (admin HTTP and gRPC) and
// the metrics port stay inside the cluster.
func TestIngressAndHTTPRoute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		values       string
		ingressRules []string // nil: no Ingress
		tls          []networkingv1.IngressTLS
		class        string
		routeRules   []string // nil: no HTTPRoute
		parents      []string // namespace/name/sectionName
		hostnames    []string
	}{
		{name: "defaults: neither", values: ""},
		{name: "both on", values: `
ingress:
  enabled: true
  className: nginx
  annotations: {nginx.ingress.kubernetes.io/proxy-read-timeout: "3600"}
  hosts: [api.example.com, gw.example.org]
  tls: [{secretName: gw-tls, hosts: [api.example.com, gw.example.org]}]
httpRoute:
  enabled: true
  parentRefs: [{name: public, namespace: gateway-system, sectionName: https}]
  hostnames: [api.example.com]
  timeouts: {request: 0s}
`,
			ingressRules: []string{"api.example.com / Prefix -> gw-gateway:http", "gw.example.org / Prefix -> gw-gateway:http"},
			tls:          []networkingv1.IngressTLS{{SecretName: "gw-tls", Hosts: []string{"api.example.com", "gw.example.org"}}},
			class:        "nginx",
			routeRules:   []string{"PathPrefix / -> Service/gw-gateway:8080"},
			parents:      []string{"gateway-system/public/https"},
			hostnames:    []string{"api.example.com"},
		},
		{name: "another http port, no hosts, the admin API off", values: `
ports: {http: 8000}
admin: {secretName: ""}
ingress: {enabled: true}
httpRoute: {enabled: true, parentRefs: [{name: edge}]}
`,
			ingressRules: []string{" / Prefix -> gw-gateway:http"},
			routeRules:   []string{"PathPrefix / -> Service/gw-gateway:8000"},
			parents:      []string{"/edge/"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs := mustRender(t, tt.values)
			ing, hasIngress := objs["Ingress/gw-gateway"].(*networkingv1.Ingress)
			if hasIngress != (tt.ingressRules != nil) {
				t.Fatalf("Ingress rendered %v, want %v (objects %v)", hasIngress, tt.ingressRules != nil, slices.Sorted(maps.Keys(objs)))
			}
			route, hasRoute := objs["HTTPRoute/gw-gateway"].(*gatewayv1.HTTPRoute)
			if hasRoute != (tt.routeRules != nil) {
				t.Fatalf("HTTPRoute rendered %v, want %v (objects %v)", hasRoute, tt.routeRules != nil, slices.Sorted(maps.Keys(objs)))
			}
			public := objs["Service/gw-gateway"]
			if hasIngress {
				if ing.APIVersion != "networking.k8s.io/v1" || ing.Kind != "Ingress" {
					t.Errorf("ingress %s %s", ing.APIVersion, ing.Kind)
				}
				if got := ingressBackends(ing); !slices.Equal(got, tt.ingressRules) {
					t.Errorf("ingress rules %q, want %q", got, tt.ingressRules)
				}
				if !slices.EqualFunc(ing.Spec.TLS, tt.tls, func(a, b networkingv1.IngressTLS) bool {
					return a.SecretName == b.SecretName && slices.Equal(a.Hosts, b.Hosts)
				}) {
					t.Errorf("ingress TLS %+v, want %+v", ing.Spec.TLS, tt.tls)
				}
				if got := ing.Spec.IngressClassName; (got == nil && tt.class != "") || (got != nil && *got != tt.class) {
					t.Errorf("ingress class %v, want %q", got, tt.class)
				}
			}
			if hasRoute {
				if route.APIVersion != "gateway.networking.k8s.io/v1" || route.Kind != "HTTPRoute" {
					t.Errorf("route %s %s", route.APIVersion, route.Kind)
				}
				if got := routeBackends(route); !slices.Equal(got, tt.routeRules) {
					t.Errorf("route rules %q, want %q", got, tt.routeRules)
				}
				var parents []string
				for _, p := range route.Spec.ParentRefs {
					ns, section := "", ""
					if p.Namespace != nil {
						ns = string(*p.Namespace)
					}
					if p.SectionName != nil {
						section = string(*p.SectionName)
					}
					parents = append(parents, ns+"/"+string(p.Name)+"/"+section)
				}
				if !slices.Equal(parents, tt.parents) {
					t.Errorf("parentRefs %q, want %q", parents, tt.parents)
				}
				var hostnames []string
				for _, h := range route.Spec.Hostnames {
					hostnames = append(hostnames, string(h))
				}
				if !slices.Equal(hostnames, tt.hostnames) {
					t.Errorf("hostnames %q, want %q", hostnames, tt.hostnames)
				}
			}
			// What they point at exists and is the public Service, which carries http; the
			// admin one exists beside it (so the test would see a route to it) and is not named.
			if (hasIngress || hasRoute) && public == nil {
				t.Fatal("no public Service to point at")
			}
			if _, ok := objs["Service/gw-gateway-admin"]; !ok {
				t.Fatal("no admin Service")
			}
			for _, line := range append(ingressBackends(orEmpty(ing)), routeBackends(orEmptyRoute(route))...) {
				if strings.Contains(line, "admin") || strings.Contains(line, "metrics") || strings.Contains(line, "9464") {
					t.Errorf("a route to the admin Service or the metrics port: %s", line)
				}
			}
		})
	}
}

func orEmpty(i *networkingv1.Ingress) *networkingv1.Ingress {
	if i == nil {
		return &networkingv1.Ingress{}
	}
	return i
}

func orEmptyRoute(r *gatewayv1.HTTPRoute) *gatewayv1.HTTPRoute {
	if r == nil {
		return &gatewayv1.HTTPRoute{}
	}
	return r
}

// A route to nowhere is refused at render time rather than applied and left unattached.
func TestRouteRefusals(t *testing.T) {
	t.Parallel()
	for name, values := range map[string]string{
		"an HTTPRoute without parentRefs": "httpRoute: {enabled: true}",
		"TLS without a secret":            "ingress: {enabled: true, tls: [{hosts: [a.example.com]}]}",
		"TLS without hosts":               "ingress: {enabled: true, tls: [{secretName: s}]}",
	} {
		if _, err := render(t, values); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
	// The same values with what was missing render: the refusals above are for it.
	for _, values := range []string{
		"httpRoute: {enabled: true, parentRefs: [{name: edge}]}",
		"ingress: {enabled: true, tls: [{secretName: s, hosts: [a.example.com]}]}",
	} {
		if _, err := render(t, values); err != nil {
			t.Errorf("%s: %v", values, err)
		}
	}
}
