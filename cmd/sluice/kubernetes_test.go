package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// deploy/kubernetes: every sluice container's arguments, with the
// $(VARS) Kubernetes expands given sample values and the mounted
// ConfigMaps written where the arguments name them, pass --check-config;
// the StatefulSet's pods find each other through its headless Service and
// its per-pod config files, its readiness is /readyz, and a
// PodDisruptionBudget covers it; the sidecar serves its rules.

type object = map[string]any

// get walks a decoded YAML document along keys (a string for a mapping,
// an int for a sequence); nil if a step is missing.
func get(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(object)
			v = m[k]
		case int:
			s, _ := v.([]any)
			if k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

func str(v any, keys ...any) string { s, _ := get(v, keys...).(string); return s }

// readManifests decodes every document of every YAML file in dir.
func readManifests(t *testing.T, dir string) map[string][]object {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", dir)
	}
	out := map[string][]object{}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(r)
		for {
			var doc object
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[filepath.Base(f)] = append(out[filepath.Base(f)], doc)
		}
		r.Close()
	}
	return out
}

// find returns the document of kind and name (name "": the first of kind).
func find(docs []object, kind, name string) object {
	for _, d := range docs {
		if str(d, "kind") == kind && (name == "" || str(d, "metadata", "name") == name) {
			return d
		}
	}
	return nil
}

var varRE = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// podArgs returns the sluice container's arguments as the pod named pod
// runs them: $(VARS) expanded from its env (the downward API's name and
// namespace, a sample secret), and every ConfigMap volume written into a
// temporary directory that stands for its mount path, as is every other
// mount.
func podArgs(t *testing.T, docs []object, podSpec any, c any, pod string) []string {
	t.Helper()
	env := map[string]string{}
	for i := 0; get(c, "env", i) != nil; i++ {
		e := get(c, "env", i)
		name := str(e, "name")
		switch {
		case get(e, "value") != nil:
			env[name] = str(e, "value")
		case str(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.name":
			env[name] = pod
		case str(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.namespace":
			env[name] = "default"
		case get(e, "valueFrom", "secretKeyRef") != nil:
			env[name] = "sample-secret-0123456789"
		default:
			t.Fatalf("env %s: no sample value for %v", name, e)
		}
	}
	mounts := map[string]string{} // mount path → the test's directory
	for i := 0; get(c, "volumeMounts", i) != nil; i++ {
		m := get(c, "volumeMounts", i)
		dir := t.TempDir()
		mounts[str(m, "mountPath")] = dir
		for j := 0; get(podSpec, "volumes", j) != nil; j++ {
			v := get(podSpec, "volumes", j)
			if str(v, "name") != str(m, "name") || get(v, "configMap") == nil {
				continue
			}
			cm := find(docs, "ConfigMap", str(v, "configMap", "name"))
			if cm == nil {
				t.Fatalf("volume %s: no ConfigMap %s in the manifest", str(v, "name"), str(v, "configMap", "name"))
			}
			for file, text := range get(cm, "data").(object) {
				os.WriteFile(filepath.Join(dir, file), []byte(text.(string)), 0o644)
			}
		}
	}
	var argv []string
	if cmd := get(c, "command"); cmd != nil {
		t.Fatalf("container %s sets command %v: the image's entrypoint is /sluice", str(c, "name"), cmd)
	}
	for i := 0; get(c, "args", i) != nil; i++ {
		a := varRE.ReplaceAllStringFunc(str(c, "args", i), func(m string) string {
			v, ok := env[m[2:len(m)-1]]
			if !ok {
				t.Fatalf("argument %q: %s is not in the container's env", str(c, "args", i), m)
			}
			return v
		})
		for path, dir := range mounts {
			if a == path || strings.HasPrefix(a, path+"/") {
				a = dir + strings.TrimPrefix(a, path)
			}
		}
		argv = append(argv, a)
	}
	return argv
}

// sluiceContainers returns the pod spec of a workload and its sluice containers.
func sluiceContainers(w object) (any, []any) {
	spec := get(w, "spec", "template", "spec")
	var out []any
	for i := 0; get(spec, "containers", i) != nil; i++ {
		if c := get(spec, "containers", i); strings.Contains(str(c, "image"), "/sluice:") {
			out = append(out, c)
		}
	}
	return spec, out
}

func flagOf(argv []string, name string) string {
	if i := slices.Index(argv, name); i >= 0 && i+1 < len(argv) {
		return argv[i+1]
	}
	return ""
}

// checkProbes: readiness is /readyz and liveness /healthz on the port
// --metrics-bind serves.
func checkProbes(t *testing.T, c any, argv []string) {
	t.Helper()
	_, port, _ := net.SplitHostPort(flagOf(argv, "--metrics-bind"))
	named := map[string]string{}
	for i := 0; get(c, "ports", i) != nil; i++ {
		named[str(c, "ports", i, "name")] = fmt.Sprint(get(c, "ports", i, "containerPort"))
	}
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		p := get(c, probe, "httpGet")
		got := fmt.Sprint(get(p, "port"))
		if n, ok := named[got]; ok {
			got = n
		}
		if str(p, "path") != path || got != port {
			t.Errorf("%s: %s %s on port %s; want %s on --metrics-bind's port %s", str(c, "name"), probe, str(p, "path"), got, path, port)
		}
	}
}

func TestKubernetesManifests(t *testing.T) {
	all := readManifests(t, filepath.Join(repoRoot, "deploy/kubernetes"))

	t.Run("statefulset", func(t *testing.T) {
		docs := all["statefulset.yaml"]
		sts := find(docs, "StatefulSet", "")
		svc := str(sts, "spec", "serviceName")
		headless := find(docs, "Service", svc)
		if str(headless, "spec", "clusterIP") != "None" || get(headless, "spec", "publishNotReadyAddresses") != true {
			t.Errorf("Service %s: want clusterIP None and publishNotReadyAddresses true (peers resolve before they are ready)", svc)
		}
		labels := get(sts, "spec", "template", "metadata", "labels").(object)
		pdb := find(docs, "PodDisruptionBudget", "")
		for k, v := range get(pdb, "spec", "selector", "matchLabels").(object) {
			if labels[k] != v {
				t.Errorf("the PodDisruptionBudget selects %s=%v, which the pods do not carry", k, v)
			}
		}
		if get(pdb, "spec", "maxUnavailable") != 1 {
			t.Errorf("PodDisruptionBudget maxUnavailable %v; want 1 (three nodes keep a majority of two)", get(pdb, "spec", "maxUnavailable"))
		}
		replicas := get(sts, "spec", "replicas").(int)
		if replicas != 3 {
			t.Errorf("replicas %d; want 3", replicas)
		}
		spec, cs := sluiceContainers(sts)
		if len(cs) != 1 {
			t.Fatalf("%d sluice containers; want 1", len(cs))
		}
		name := str(sts, "metadata", "name")
		bootstraps := 0
		for i := range replicas {
			pod := fmt.Sprintf("%s-%d", name, i)
			argv := podArgs(t, docs, spec, cs[0], pod)
			if out, code := run(t, binPath, append(argv, "--check-config")...); code != 0 {
				t.Fatalf("%s: sluice %v --check-config: exit %d: %s", pod, argv, code, out)
			}
			checkProbes(t, cs[0], argv)
			// What the pod's own config file and its flags say, read by
			// the binary itself.
			out, code := run(t, binPath, append(argv, "--print-config")...)
			if code != 0 {
				t.Fatalf("%s: --print-config: exit %d: %s", pod, code, out)
			}
			conf := map[string]string{}
			for _, line := range strings.Split(out, "\n") {
				if k, v, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
					conf[k] = v
				}
			}
			if conf["node-id"] != pod {
				t.Errorf("%s: node-id %s", pod, conf["node-id"])
			}
			self := pod + "." + svc + "."
			for _, k := range []string{"raft-advertise", "announce-addr"} {
				if !strings.HasPrefix(conf[k], self) {
					t.Errorf("%s: %s %s; want the pod's name under the headless Service, %s…", pod, k, conf[k], self)
				}
			}
			var others []string
			if p := conf["peers"]; p != `""` {
				others = strings.Fields(p)
			}
			if j := conf["join"]; j != `""` {
				others = append(others, j)
			}
			if conf["bootstrap"] == "yes" {
				bootstraps++
				if len(others) != replicas-1 {
					t.Errorf("%s bootstraps the group asking %v; want the %d other pods", pod, others, replicas-1)
				}
			} else if len(others) != 1 {
				t.Errorf("%s: neither bootstraps nor joins one member (%v)", pod, others)
			}
			for _, o := range others {
				if o == pod+"."+svc+":6380" || !regexp.MustCompile(`^`+name+`-\d+\.`+svc+`:6380$`).MatchString(o) {
					t.Errorf("%s: peer %s is not another pod's RESP address under %s", pod, o, svc)
				}
			}
		}
		if bootstraps != 1 {
			t.Errorf("%d pods bootstrap the group; want exactly 1", bootstraps)
		}
	})

	t.Run("sharded", func(t *testing.T) {
		docs := all["sharded.yaml"]
		var sets []object
		for _, d := range docs {
			if str(d, "kind") == "StatefulSet" {
				sets = append(sets, d)
			}
		}
		if len(sets) != 3 {
			t.Fatalf("%d StatefulSets; want one per data group, 3", len(sets))
		}
		svc := ""
		seeds := map[string]bool{}
		for g, sts := range sets {
			group := strconv.Itoa(g + 1)
			name := str(sts, "metadata", "name")
			if svc == "" {
				svc = str(sts, "spec", "serviceName")
			} else if str(sts, "spec", "serviceName") != svc {
				t.Errorf("%s: serviceName %s; want the one headless Service %s", name, str(sts, "spec", "serviceName"), svc)
			}
			labels := get(sts, "spec", "template", "metadata", "labels").(object)
			pdbs := 0
			for _, d := range docs {
				if str(d, "kind") != "PodDisruptionBudget" {
					continue
				}
				sel := get(d, "spec", "selector", "matchLabels").(object)
				match := true
				for k, v := range sel {
					match = match && labels[k] == v
				}
				if match && len(sel) == len(labels) {
					pdbs++
					if get(d, "spec", "maxUnavailable") != 1 {
						t.Errorf("%s: its PodDisruptionBudget allows %v down; want 1", name, get(d, "spec", "maxUnavailable"))
					}
				}
			}
			if pdbs != 1 {
				t.Errorf("%s: %d PodDisruptionBudgets select exactly its pods; want 1", name, pdbs)
			}
			replicas := get(sts, "spec", "replicas").(int)
			spec, cs := sluiceContainers(sts)
			if replicas != 3 || len(cs) != 1 {
				t.Fatalf("%s: %d replicas, %d sluice containers; want 3 and 1", name, replicas, len(cs))
			}
			bootstraps := 0
			for i := range replicas {
				pod := fmt.Sprintf("%s-%d", name, i)
				argv := podArgs(t, docs, spec, cs[0], pod)
				if out, code := run(t, binPath, append(argv, "--check-config")...); code != 0 {
					t.Fatalf("%s: sluice %v --check-config: exit %d: %s", pod, argv, code, out)
				}
				checkProbes(t, cs[0], argv)
				out, code := run(t, binPath, append(argv, "--print-config")...)
				if code != 0 {
					t.Fatalf("%s: --print-config: exit %d: %s", pod, code, out)
				}
				conf := map[string]string{}
				for _, line := range strings.Split(out, "\n") {
					if k, v, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
						conf[k] = v
					}
				}
				if conf["node-id"] != pod || conf["cluster-group"] != group || conf["cluster-groups"] != "3" || conf["cluster-proxy"] != "yes" {
					t.Errorf("%s: node-id %s, cluster-group %s, cluster-groups %s, cluster-proxy %s; want %s, %s, 3, yes",
						pod, conf["node-id"], conf["cluster-group"], conf["cluster-groups"], conf["cluster-proxy"], pod, group)
				}
				if conf["bootstrap"] == "yes" {
					bootstraps++
				} else if want := name + "-0." + svc + ":6380"; conf["join"] != want {
					t.Errorf("%s: join %s; want its group's first pod, %s", pod, conf["join"], want)
				}
				if seed := conf["cluster-seed"]; seed != `""` {
					seeds[seed] = true
				} else if pod != "sluice-g1-0" {
					t.Errorf("%s has no --cluster-seed; only group 1's bootstrapping pod starts the meta group", pod)
				}
			}
			if bootstraps != 1 {
				t.Errorf("%s: %d pods bootstrap the group; want 1", name, bootstraps)
			}
		}
		if !seeds["sluice-g1-0."+svc+":6380"] || len(seeds) != 1 {
			t.Errorf("seeds %v; want every pod to join through sluice-g1-0", seeds)
		}
	})

	t.Run("sidecar", func(t *testing.T) {
		docs := all["sidecar.yaml"]
		dep := find(docs, "Deployment", "")
		spec, cs := sluiceContainers(dep)
		if len(cs) != 1 || len(get(spec, "containers").([]any)) < 2 {
			t.Fatalf("want one sluice container beside the application's")
		}
		argv := podArgs(t, docs, spec, cs[0], "app-5d8c7b9f6-x2k4q")
		if out, code := run(t, binPath, append(argv, "--check-config")...); code != 0 {
			t.Fatalf("sluice %v --check-config: exit %d: %s", argv, code, out)
		}
		checkProbes(t, cs[0], argv)
		if flagOf(argv, "--bind") != "127.0.0.1" {
			t.Errorf("the sidecar binds %s; want the pod's loopback only", flagOf(argv, "--bind"))
		}
		// Started, with the test's ports: it loads the ConfigMap's rules
		// and is ready.
		ports := filepath.Join(t.TempDir(), "ports")
		run := slices.Clone(argv)
		run[slices.Index(run, "--port")+1] = "auto"
		run[slices.Index(run, "--metrics-bind")+1] = "127.0.0.1:0"
		p := startArgv(t, append(run, "--ports-file", ports))
		p.waitLog(t, `msg="rules loaded" files=1 domains=1 rules=1`)
		addrs := p.ports(t, ports)
		if out, code := runBin(t, "--healthcheck", "http://"+addrs["metrics"]+"/readyz"); code != 0 {
			t.Errorf("/readyz: exit %d: %s", code, out)
		}
	})
}

func runBin(t *testing.T, args ...string) (string, int) { return run(t, binPath, args...) }
