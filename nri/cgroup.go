package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// CgroupDir turns the cgroups path the runtime gives for a container into
// its directory under root (the cgroup v2 mount).
//
// With the cgroupfs driver the path is one already: "/kubepods/burstable/
// pod<uid>/<id>". With the systemd driver it is "slice:prefix:name", e.g.
// "kubepods-burstable-pod<uid>.slice:cri-containerd:<id>": the slice sits
// under each of its dash-separated parents, and the container is the scope
// "prefix-name.scope" in it.
func CgroupDir(root, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("no cgroups path")
	}
	if strings.HasPrefix(path, "/") {
		clean := filepath.Clean(path)
		if clean == "/" {
			return "", fmt.Errorf("cgroups path %q is the root", path)
		}
		return filepath.Join(root, clean), nil
	}
	parts := strings.Split(path, ":")
	if len(parts) != 3 || parts[2] == "" {
		return "", fmt.Errorf("cgroups path %q: neither absolute nor slice:prefix:name", path)
	}
	slice, prefix, name := parts[0], parts[1], parts[2]
	dir := root
	if slice != "" && slice != "-.slice" {
		base, ok := strings.CutSuffix(slice, ".slice")
		if !ok || strings.Contains(base, "/") {
			return "", fmt.Errorf("cgroups path %q: %q is not a slice", path, slice)
		}
		// kubepods-burstable-pod1.slice lives in
		// kubepods.slice/kubepods-burstable.slice/.
		words := strings.Split(base, "-")
		for i := range words {
			if words[i] == "" {
				return "", fmt.Errorf("cgroups path %q: slice %q has an empty part", path, slice)
			}
			dir = filepath.Join(dir, strings.Join(words[:i+1], "-")+".slice")
		}
	}
	scope := name
	if !strings.HasSuffix(name, ".scope") && !strings.HasSuffix(name, ".slice") {
		if prefix != "" {
			scope = prefix + "-" + name
		}
		scope += ".scope"
	}
	if strings.Contains(scope, "/") {
		return "", fmt.Errorf("cgroups path %q: %q is not a unit name", path, scope)
	}
	return filepath.Join(dir, scope), nil
}
