package rls

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"gopkg.in/yaml.v3"

	"github.com/sluice-rl/sluice/policy"
)

// deploy/envoy holds an Envoy configuration that asks sluice and the rules
// file it goes with. There is no Envoy binary here: the test reads the
// configuration into Envoy's own bootstrap proto (go-control-plane),
// validates it and every typed_config inside it with the generated
// validators, and checks that it points at sluice's gRPC port over HTTP/2
// and that every descriptor its rate_limits actions send meets a rule.

// validator is what protoc-gen-validate generates.
type validator interface{ ValidateAll() error }

// decodeEnvoyConfig reads a YAML Envoy bootstrap into Envoy's proto,
// strictly (an unknown field is an error, as it is to Envoy), validates it,
// and opens and validates every typed_config it holds: the validators do
// not look inside an Any.
func decodeEnvoyConfig(path string) (*bootstrapv3.Bootstrap, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	b := &bootstrapv3.Bootstrap{}
	if err := protojson.Unmarshal(js, b); err != nil {
		return nil, err
	}
	if err := b.ValidateAll(); err != nil {
		return nil, err
	}
	for _, l := range b.GetStaticResources().GetListeners() {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				m, err := unpack(f.GetName(), f.GetTypedConfig())
				if err != nil {
					return nil, err
				}
				if hcm, ok := m.(*hcmv3.HttpConnectionManager); ok {
					for _, hf := range hcm.GetHttpFilters() {
						if _, err := unpack(hf.GetName(), hf.GetTypedConfig()); err != nil {
							return nil, err
						}
					}
				}
			}
		}
	}
	for _, c := range b.GetStaticResources().GetClusters() {
		for name, opts := range c.GetTypedExtensionProtocolOptions() {
			if _, err := unpack(c.GetName()+" "+name, opts); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// unpack opens a typed_config and validates it.
func unpack(where string, a *anypb.Any) (proto.Message, error) {
	m, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	v, ok := m.(validator)
	if !ok {
		return nil, fmt.Errorf("%s: %T has no validator", where, m)
	}
	if err := v.ValidateAll(); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return m, nil
}

func TestDeployEnvoyConfigIsValidAndPointsAtSluice(t *testing.T) {
	b, err := decodeEnvoyConfig("../deploy/envoy/envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var filter *ratelimitfilterv3.RateLimit
	var actions [][]*routev3.RateLimit_Action
	for _, l := range b.GetStaticResources().GetListeners() {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				m, _ := f.GetTypedConfig().UnmarshalNew()
				hcm, ok := m.(*hcmv3.HttpConnectionManager)
				if !ok {
					continue
				}
				for _, hf := range hcm.GetHttpFilters() {
					m, _ := hf.GetTypedConfig().UnmarshalNew()
					if rl, ok := m.(*ratelimitfilterv3.RateLimit); ok {
						filter = rl
					}
				}
				for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
					for _, rl := range vh.GetRateLimits() {
						actions = append(actions, rl.GetActions())
					}
					for _, r := range vh.GetRoutes() {
						for _, rl := range r.GetRoute().GetRateLimits() {
							actions = append(actions, rl.GetActions())
						}
					}
				}
			}
		}
	}
	if filter == nil {
		t.Fatal("no envoy.filters.http.ratelimit filter")
	}
	cluster := filter.GetRateLimitService().GetGrpcService().GetEnvoyGrpc().GetClusterName()
	found := false
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() != cluster {
			continue
		}
		found = true
		js, _ := protojson.Marshal(c)
		if !strings.Contains(string(js), `"http2ProtocolOptions"`) {
			t.Errorf("cluster %s does not speak HTTP/2, which gRPC needs", cluster)
		}
		addr := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		if addr.GetAddress() != "127.0.0.1" || addr.GetPortValue() != 8081 {
			t.Errorf("cluster %s points at %s:%d; want sluice's --grpc-bind 127.0.0.1:8081", cluster, addr.GetAddress(), addr.GetPortValue())
		}
		if hc := c.GetHealthChecks(); len(hc) != 1 || hc[0].GetGrpcHealthCheck().GetServiceName() != ServiceName {
			t.Errorf("cluster %s: health checks %v; want the gRPC health of %s", cluster, hc, ServiceName)
		}
	}
	if !found {
		t.Fatalf("the rate limit service's cluster %q is not defined", cluster)
	}

	// The rules file has the filter's domain, and a rule for every
	// descriptor the actions send.
	rs, err := policy.Load([]string{"../deploy/envoy/ratelimit.yaml"}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rs.HasDomain([]byte(filter.GetDomain())) {
		t.Fatalf("ratelimit.yaml has no domain %q", filter.GetDomain())
	}
	var p policy.Plan
	for _, as := range actions {
		d := policy.Descriptor{}
		for _, a := range as {
			e := policy.Entry{Value: []byte("v")}
			switch {
			case a.GetRemoteAddress() != nil:
				e = policy.Entry{Key: []byte("remote_address"), Value: []byte("192.0.2.1")}
			case a.GetRequestHeaders() != nil:
				e.Key = []byte(a.GetRequestHeaders().GetDescriptorKey())
				if string(e.Key) == "plan" {
					e.Value = []byte("free")
				}
			case a.GetGenericKey() != nil:
				e = policy.Entry{Key: []byte("generic_key"), Value: []byte(a.GetGenericKey().GetDescriptorValue())}
			default:
				t.Fatalf("an action the test does not know: %v", a)
			}
			d.Entries = append(d.Entries, e)
		}
		if err := rs.Plan(&p, []byte(filter.GetDomain()), 1, []policy.Descriptor{d}); err != nil {
			t.Fatal(err)
		}
		if it := p.Items[0]; it.Flags&policy.FlagNoRule != 0 {
			t.Errorf("the descriptor of actions %v meets no rule", as)
		}
	}
	if len(actions) != 3 {
		t.Fatalf("%d rate_limits; want 3", len(actions))
	}
}

func TestEnvoyConfigValidationRefusesMistakes(t *testing.T) {
	good, err := os.ReadFile("../deploy/envoy/envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"an unknown field", "failure_mode_deny: false", "failure_mode_denied: false", `unknown field "failure_mode_denied"`},
		{"a filter without its domain", "domain: api", "domain: \"\"", "invalid RateLimit.Domain"},
		{"a port out of range", "port_value: 8081", "port_value: 80810", "invalid SocketAddress.PortValue"},
	} {
		bad := strings.Replace(string(good), c.from, c.to, 1)
		if bad == string(good) {
			t.Fatalf("%s: %q is not in envoy.yaml", c.name, c.from)
		}
		path := t.TempDir() + "/envoy.yaml"
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := decodeEnvoyConfig(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error with %q", c.name, err, c.want)
		}
	}
}
