// check: the offline check of deploy/kubernetes/'s manifests (check.sh runs
// it; no cluster needed).
//
//	check -version VERSION FILE...
//
// Each YAML document is decoded strictly into its kind's k8s.io/api type (an
// unknown or misspelled field, a duplicate key, a value of the wrong type or
// an unparsable quantity is an error), then checked against what the agent
// and the NRI plugin need: privileged containers, the host's PID namespace,
// each host path mounted where it is used, the image of this version, the
// probe. Pods (the examples) are checked for their chameleon.scx/*
// annotations. Every problem is printed, one per line; the exit status is 1
// if there was any.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The image every container runs, but for its tag (the version).
const imageRepo = "localhost/scx_chameleon"

// A host path a container must have mounted at the same path inside.
type hostMount struct {
	container string
	path      string
	readOnly  bool // must be mounted read-only
	types     []corev1.HostPathType
}

var dir = corev1.HostPathDirectory
var dirOrCreate = corev1.HostPathDirectoryOrCreate
var unset = corev1.HostPathUnset

// What the pod needs of the host, by container ("module": the init container).
var hostMounts = []hostMount{
	{"agent", "/sys/fs/cgroup", false, []corev1.HostPathType{dir}},
	{"agent", "/sys/kernel/btf", true, []corev1.HostPathType{dir}},
	{"agent", "/sys/fs/bpf", false, []corev1.HostPathType{dir, dirOrCreate}},
	{"agent", "/run/scx_chameleon", false, []corev1.HostPathType{dirOrCreate}},
	{"agent", "/var/run/scx", false, []corev1.HostPathType{dirOrCreate}},
	{"agent", "/boot", true, []corev1.HostPathType{dir, unset}},
	// Optional on the host (no type: no check that it exists).
	{"agent", "/sys/kernel/debug", false, []corev1.HostPathType{unset, dir}},
	{"nri", "/run/scx_chameleon", false, []corev1.HostPathType{dirOrCreate}},
	{"nri", "/var/run/nri", false, []corev1.HostPathType{dirOrCreate}},
	{"module", "/lib/modules", true, []corev1.HostPathType{unset, dir}},
}

// The agent's control socket: its default (scx_chameleon --help:
// --control-socket), in the directory shared above.
const controlSocket = "/run/scx_chameleon/control.sock"

// containerd's NRI socket (its default, in the directory mounted above).
const nriSocket = "/var/run/nri/nri.sock"

type checker struct {
	version  string
	problems []string
	where    string
}

// fail: one problem, on one line (a YAML error's lines joined).
func (c *checker) fail(format string, args ...any) {
	msg := strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ")
	c.problems = append(c.problems, c.where+": "+msg)
}

func main() {
	version := flag.String("version", "", "the workspace version (Cargo.toml): the image tag every container must use")
	flag.Parse()
	if *version == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: check -version VERSION FILE...")
		os.Exit(2)
	}
	c := &checker{version: *version}
	var namespaces []corev1.Namespace
	var accounts []corev1.ServiceAccount
	var daemonsets []appsv1.DaemonSet
	pods := 0
	for _, file := range flag.Args() {
		data, err := os.ReadFile(file)
		if err != nil {
			c.where = file
			c.fail("%v", err)
			continue
		}
		for i, doc := range splitDocuments(data) {
			c.where = fmt.Sprintf("%s: document %d", file, i+1)
			switch obj := c.decode(doc).(type) {
			case *corev1.Namespace:
				namespaces = append(namespaces, *obj)
			case *corev1.ServiceAccount:
				accounts = append(accounts, *obj)
			case *appsv1.DaemonSet:
				c.where = fmt.Sprintf("%s: DaemonSet %s", file, obj.Name)
				c.daemonSet(obj)
				daemonsets = append(daemonsets, *obj)
			case *corev1.Pod:
				c.where = fmt.Sprintf("%s: Pod %s", file, obj.Name)
				c.annotatedPod(obj)
				pods++
			}
		}
	}
	c.where = "manifests"
	c.together(namespaces, accounts, daemonsets)
	for _, p := range c.problems {
		fmt.Println("FAIL", p)
	}
	if len(c.problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("ok: %d namespace(s), %d service account(s), %d daemonset(s), %d example pod(s) in %d file(s)\n",
		len(namespaces), len(accounts), len(daemonsets), pods, flag.NArg())
}

// splitDocuments: the YAML documents of a file (separated by "---" lines),
// those with nothing but comments left out.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		for _, l := range strings.Split(cur.String(), "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, bytes.Clone(cur.Bytes()))
				break
			}
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.TrimRight(line, " \t\r\n") == "---" {
			flush()
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return docs
}

// decode: the document as its kind's typed object, strictly (an unknown
// field anywhere, a duplicate key, a wrong type: an error); nil after a
// problem.
func (c *checker) decode(doc []byte) any {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		c.fail("not YAML: %v", err)
		return nil
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		obj = &corev1.Namespace{}
	case "v1 ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "apps/v1 DaemonSet":
		obj = &appsv1.DaemonSet{}
	case "v1 Pod":
		obj = &corev1.Pod{}
	default:
		c.fail("apiVersion %q kind %q: not a kind these manifests use (v1 Namespace, v1 ServiceAccount, apps/v1 DaemonSet, v1 Pod)", tm.APIVersion, tm.Kind)
		return nil
	}
	// As the API server decodes: field names case-sensitive (encoding/json
	// would take "hostPid" for hostPID), unknown and duplicate fields errors.
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		c.fail("%s: %v", tm.Kind, err)
		return nil
	}
	strict, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
	if err != nil {
		c.fail("%s: %v", tm.Kind, err)
		return nil
	}
	for _, e := range strict {
		c.fail("%s: %v", tm.Kind, e)
	}
	if len(strict) > 0 {
		return nil
	}
	return obj
}

func (c *checker) name(what, name string) {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		c.fail("%s %q: %s", what, name, strings.Join(errs, "; "))
	}
}

// daemonSet: the API server's own checks that a client-side decode misses
// (those this manifest could break), and what the agent and plugin need.
func (c *checker) daemonSet(ds *appsv1.DaemonSet) {
	c.name("name", ds.Name)
	if ds.Namespace == "" {
		c.fail("no namespace")
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	switch {
	case ds.Spec.Selector == nil:
		c.fail("no spec.selector")
	case err != nil:
		c.fail("spec.selector: %v", err)
	case sel.Empty() || !sel.Matches(labels.Set(ds.Spec.Template.Labels)):
		c.fail("spec.selector %v does not select the template's labels %v", sel, ds.Spec.Template.Labels)
	}
	spec := &ds.Spec.Template.Spec
	if !spec.HostPID {
		c.fail("hostPID is not true: the agent must see the host's tasks (and write their pids)")
	}
	if spec.PriorityClassName != "system-node-critical" {
		c.fail("priorityClassName %q, want system-node-critical", spec.PriorityClassName)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < 20 {
		c.fail("terminationGracePeriodSeconds %v: want at least 20 (the agent detaches on SIGTERM; the systemd unit allows 20 s)", deref(g))
	}
	if !slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool {
		return t.Key == "" && t.Operator == corev1.TolerationOpExists && t.Effect == ""
	}) {
		c.fail("no toleration {operator: Exists} (without key or effect): some nodes would go without the scheduler")
	}
	if spec.RestartPolicy != "" && spec.RestartPolicy != corev1.RestartPolicyAlways {
		c.fail("restartPolicy %q: a DaemonSet's pods restart Always", spec.RestartPolicy)
	}

	volumes := map[string]*corev1.Volume{}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		c.name("volume", v.Name)
		if volumes[v.Name] != nil {
			c.fail("volume %q twice", v.Name)
		}
		volumes[v.Name] = v
		if v.HostPath == nil {
			c.fail("volume %q: not a hostPath (every volume here is one of the host's directories)", v.Name)
		} else if !strings.HasPrefix(v.HostPath.Path, "/") {
			c.fail("volume %q: hostPath %q is not absolute", v.Name, v.HostPath.Path)
		}
	}

	containers := map[string]*corev1.Container{}
	all := append(slices.Clone(spec.InitContainers), spec.Containers...)
	for i := range all {
		k := &all[i]
		c.name("container", k.Name)
		if containers[k.Name] != nil {
			c.fail("container %q twice", k.Name)
		}
		containers[k.Name] = k
		c.container(k, volumes)
	}
	used := map[string]bool{}
	for _, k := range all {
		for _, m := range k.VolumeMounts {
			used[m.Name] = true
		}
	}
	for _, v := range spec.Volumes {
		if !used[v.Name] {
			c.fail("volume %q is mounted by no container", v.Name)
		}
	}
	for _, want := range []string{"agent", "nri"} {
		if k := containers[want]; k == nil || slices.ContainsFunc(spec.InitContainers, func(i corev1.Container) bool { return i.Name == want }) {
			c.fail("no container %q (README.md's commands name it)", want)
		}
	}

	for _, hm := range hostMounts {
		k := containers[hm.container]
		if k == nil {
			c.fail("no container %q to mount %s in", hm.container, hm.path)
			continue
		}
		var vol *corev1.Volume
		for _, v := range spec.Volumes {
			if v.HostPath != nil && v.HostPath.Path == hm.path {
				vol = &v
			}
		}
		if vol == nil {
			c.fail("no hostPath volume for %s (container %s needs it)", hm.path, hm.container)
			continue
		}
		if t := deref(vol.HostPath.Type); !slices.Contains(hm.types, t) {
			c.fail("volume %q (%s): hostPath type %q, want one of %q", vol.Name, hm.path, t, hm.types)
		}
		i := slices.IndexFunc(k.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == vol.Name })
		if i < 0 {
			c.fail("container %s does not mount volume %q (%s)", k.Name, vol.Name, hm.path)
			continue
		}
		m := k.VolumeMounts[i]
		if m.MountPath != hm.path {
			c.fail("container %s mounts %s at %s, want the same path inside", k.Name, hm.path, m.MountPath)
		}
		if hm.readOnly && !m.ReadOnly {
			c.fail("container %s: %s is not mounted readOnly", k.Name, hm.path)
		}
	}

	if a := containers["agent"]; a != nil {
		c.agent(a)
	}
	if n := containers["nri"]; n != nil {
		c.nri(n, containers["agent"])
	}
	if m := containers["module"]; m != nil {
		c.module(m, spec)
	}
}

// container: what every container here must be.
func (c *checker) container(k *corev1.Container, volumes map[string]*corev1.Volume) {
	want := imageRepo + ":" + c.version
	if k.Image != want {
		c.fail("container %s: image %q, want %q (the workspace version in Cargo.toml)", k.Name, k.Image, want)
	}
	// No registry serves it: the image is imported on each node.
	if k.ImagePullPolicy != corev1.PullNever && k.ImagePullPolicy != corev1.PullIfNotPresent {
		c.fail("container %s: imagePullPolicy %q, want Never or IfNotPresent (the image is imported, not pulled)", k.Name, k.ImagePullPolicy)
	}
	if len(k.Command) == 0 {
		c.fail("container %s: no command (the image has none worth relying on)", k.Name)
	}
	if sc := k.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
		c.fail("container %s: not privileged", k.Name)
	}
	req := k.Resources.Requests
	if req.Cpu().IsZero() || req.Memory().IsZero() {
		c.fail("container %s: no cpu and memory requests", k.Name)
	}
	if req.Cpu().Cmp(resource.MustParse("200m")) > 0 || req.Memory().Cmp(resource.MustParse("256Mi")) > 0 {
		c.fail("container %s: requests %s cpu, %s memory: more than a node agent needs", k.Name, req.Cpu(), req.Memory())
	}
	if _, ok := k.Resources.Limits[corev1.ResourceCPU]; ok {
		c.fail("container %s: a cpu limit throttles it (the agent applies tags; the plugin sits in container creation)", k.Name)
	}
	paths := map[string]bool{}
	for _, m := range k.VolumeMounts {
		if volumes[m.Name] == nil {
			c.fail("container %s: mounts volume %q, which the pod does not have", k.Name, m.Name)
		}
		if paths[m.MountPath] {
			c.fail("container %s: two mounts at %s", k.Name, m.MountPath)
		}
		paths[m.MountPath] = true
	}
}

// agent: runs the agent; its probes ask `scx_chameleon status`.
func (c *checker) agent(a *corev1.Container) {
	if len(a.Command) == 0 || !strings.HasSuffix(a.Command[0], "/scx_chameleon") {
		c.fail("container agent: command %q does not run scx_chameleon", a.Command)
	}
	if s := flagValue(a.Args, "--control-socket"); s != "" && s != controlSocket {
		c.fail("container agent: --control-socket %s: the plugin and `scx_chameleon status` on the node use %s", s, controlSocket)
	}
	for name, p := range map[string]*corev1.Probe{"startupProbe": a.StartupProbe, "readinessProbe": a.ReadinessProbe, "livenessProbe": a.LivenessProbe} {
		if p == nil || p.Exec == nil {
			c.fail("container agent: no exec %s", name)
			continue
		}
		cmd := p.Exec.Command
		if len(cmd) < 2 || !strings.HasSuffix(cmd[0], "/scx_chameleon") || cmd[1] != "status" {
			c.fail("container agent: %s runs %q, want scx_chameleon status", name, cmd)
		}
		// status waits up to 1 s for the agent and 1 s for the counters.
		if p.TimeoutSeconds < 3 {
			c.fail("container agent: %s timeoutSeconds %d: status may take 2 s", name, p.TimeoutSeconds)
		}
	}
}

// nri: the plugin, pointed at the runtime's socket and the agent's.
func (c *checker) nri(n, agent *corev1.Container) {
	if len(n.Command) == 0 || !strings.HasSuffix(n.Command[0], "/scx_chameleon-nri") {
		c.fail("container nri: command %q does not run scx_chameleon-nri", n.Command)
	}
	if s := flagValue(n.Args, "--nri-socket"); s != nriSocket {
		c.fail("container nri: --nri-socket %q, want %s", s, nriSocket)
	}
	want := controlSocket
	if agent != nil {
		if s := flagValue(agent.Args, "--control-socket"); s != "" {
			want = s
		}
	}
	if s := flagValue(n.Args, "--control-socket"); s != want {
		c.fail("container nri: --control-socket %q, want the agent's, %s", s, want)
	}
	if s := flagValue(n.Args, "--idx"); s != "" {
		if i, err := strconv.Atoi(s); err != nil || i < 0 || i > 99 {
			c.fail("container nri: --idx %q: NRI plugin indices are two digits, 00..99", s)
		}
	}
}

// module: the init container that loads chameleon_proxy if asked, off unless asked.
func (c *checker) module(m *corev1.Container, spec *corev1.PodSpec) {
	if !slices.ContainsFunc(spec.InitContainers, func(i corev1.Container) bool { return i.Name == "module" }) {
		c.fail("container module: must be an init container (it runs before the agent)")
	}
	v := ""
	for _, e := range m.Env {
		if e.Name == "CHAMELEON_MODULE" {
			v = e.Value
		}
	}
	if v != "off" {
		c.fail("container module: CHAMELEON_MODULE %q, want \"off\" by default (on and required are the user's choice)", v)
	}
}

// together: what the documents say of each other.
func (c *checker) together(namespaces []corev1.Namespace, accounts []corev1.ServiceAccount, daemonsets []appsv1.DaemonSet) {
	for _, ds := range daemonsets {
		if !slices.ContainsFunc(namespaces, func(n corev1.Namespace) bool { return n.Name == ds.Namespace }) {
			c.fail("DaemonSet %s: namespace %q is not among the manifests", ds.Name, ds.Namespace)
		}
		sa := ds.Spec.Template.Spec.ServiceAccountName
		if sa != "" && !slices.ContainsFunc(accounts, func(a corev1.ServiceAccount) bool { return a.Name == sa && a.Namespace == ds.Namespace }) {
			c.fail("DaemonSet %s: service account %s/%s is not among the manifests", ds.Name, ds.Namespace, sa)
		}
		if sa != "" {
			if t := ds.Spec.Template.Spec.AutomountServiceAccountToken; t == nil || *t {
				c.fail("DaemonSet %s: automountServiceAccountToken is not false: neither container uses the API", ds.Name)
			}
		}
	}
	for _, a := range accounts {
		if !slices.ContainsFunc(namespaces, func(n corev1.Namespace) bool { return n.Name == a.Namespace }) {
			c.fail("ServiceAccount %s: namespace %q is not among the manifests", a.Name, a.Namespace)
		}
	}
	for _, n := range namespaces {
		if n.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
			c.fail("Namespace %s: label pod-security.kubernetes.io/enforce is not \"privileged\": Pod Security admission would refuse the pod", n.Name)
		}
	}
}

// The annotations the NRI plugin reads, with what each accepts (the values
// of `scx_chameleon tag`'s flags, scx_chameleon --help).
var annotationValue = map[string]*regexp.Regexp{
	"level":  regexp.MustCompile(`^[1-3]$`),
	"weight": regexp.MustCompile(`^[0-9]+$`), // 1..10000, below
	"tax":    regexp.MustCompile(`^(auto|[0-9]+(\.[0-9]{1,2})?)$`),
	"smt":    regexp.MustCompile(`^(uni|smt|kwork|any)$`),
	"prio":   regexp.MustCompile(`^(high|normal)$`),
}

// annotatedPod: an example pod's chameleon.scx/* annotations, each one the
// plugin knows, with a value the agent accepts, and each per-container
// override naming a container of the pod.
func (c *checker) annotatedPod(p *corev1.Pod) {
	names := map[string]bool{}
	for _, k := range p.Spec.Containers {
		names[k.Name] = true
	}
	n := 0
	for key, val := range p.Annotations {
		field, ok := strings.CutPrefix(key, "chameleon.scx/")
		if !ok {
			continue
		}
		n++
		if f, ctr, ok := strings.Cut(field, ".container."); ok {
			field = f
			if !names[ctr] {
				c.fail("annotation %s: the pod has no container %q", key, ctr)
			}
			// A container's own level may be "off": untagged in a tagged pod.
			if f == "level" && val == "off" {
				continue
			}
		}
		re := annotationValue[field]
		if re == nil {
			c.fail("annotation %s: unknown (level, weight, tax, smt, prio, each also as KEY.container.NAME)", key)
			continue
		}
		if !re.MatchString(val) {
			c.fail("annotation %s: value %q: want %s", key, val, re)
			continue
		}
		switch field {
		case "weight":
			if w, _ := strconv.Atoi(val); w < 1 || w > 10000 {
				c.fail("annotation %s: weight %s: want 1..10000", key, val)
			}
		case "tax":
			if t, err := strconv.ParseFloat(val, 64); err == nil && (t < 0.01 || t > 100) {
				c.fail("annotation %s: tax %s: want 0.01..100 or auto", key, val)
			}
		}
	}
	if n == 0 {
		c.fail("no chameleon.scx/ annotation: not an example of one")
	}
}

// flagValue: the word after --name in args, or of --name=VALUE.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
