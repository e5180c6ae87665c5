package main

import (
	"sort"
	"strings"
)

// Prefix of every annotation the plugin reads.
const Prefix = "chameleon.scx/"

// Keys a pod may set, as `scx_chameleon tag` takes them. The agent checks
// the values (one check for the CLI, the rules file and this plugin); the
// plugin only passes on what it finds under Prefix. A key it does not know
// is passed on too, so that the agent refuses it and says so.
var Keys = []string{"level", "weight", "tax", "smt", "prio"}

// Off, as a container's own level, leaves that container untagged in a pod
// whose other containers are tagged (a sidecar next to the worker).
const Off = "off"

// Settings is what one container asks for: key → value, the whole tag.
type Settings map[string]string

// ForContainer returns the settings a container asks for from its pod's
// annotations, and whether it asks for a tag at all.
//
//	chameleon.scx/level: "1"                    every container of the pod
//	chameleon.scx/tax: "0.5"
//	chameleon.scx/level.container.worker: "2"   container "worker" only
//	chameleon.scx/level.container.sidecar: off  "sidecar" stays untagged
//
// A container's own value wins over the pod's for the same key. The pod
// asks for nothing unless some key under Prefix applies to the container.
func ForContainer(annotations map[string]string, container string) (Settings, bool) {
	s := Settings{}
	own := Settings{}
	for k, v := range annotations {
		key, ok := strings.CutPrefix(k, Prefix)
		if !ok {
			continue
		}
		if base, name, scoped := strings.Cut(key, ".container."); scoped {
			if name == container {
				own[base] = v
			}
			continue
		}
		s[key] = v
	}
	for k, v := range own {
		s[k] = v
	}
	if strings.EqualFold(strings.TrimSpace(s["level"]), Off) {
		return nil, false
	}
	return s, len(s) > 0
}

// String lists the settings in key order, as the log shows them.
func (s Settings) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + s[k])
	}
	return b.String()
}
