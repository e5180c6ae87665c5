package main

import (
	"reflect"
	"testing"
)

func TestPodValuesApplyToEveryContainer(t *testing.T) {
	a := map[string]string{
		"chameleon.scx/level": "1",
		"chameleon.scx/tax":   "0.5",
		"other.io/level":      "9",
	}
	s, ok := ForContainer(a, "worker")
	if !ok || !reflect.DeepEqual(s, Settings{"level": "1", "tax": "0.5"}) {
		t.Fatalf("got %v %v", s, ok)
	}
}

func TestAContainersOwnValueWins(t *testing.T) {
	a := map[string]string{
		"chameleon.scx/level":                  "1",
		"chameleon.scx/level.container.worker": "2",
		"chameleon.scx/prio.container.other":   "high",
	}
	s, _ := ForContainer(a, "worker")
	if !reflect.DeepEqual(s, Settings{"level": "2"}) {
		t.Fatalf("worker: %v", s)
	}
	s, _ = ForContainer(a, "other")
	if !reflect.DeepEqual(s, Settings{"level": "1", "prio": "high"}) {
		t.Fatalf("other: %v", s)
	}
}

func TestOnlyAContainerNamedGetsAScopedTag(t *testing.T) {
	a := map[string]string{"chameleon.scx/level.container.worker": "1"}
	if s, ok := ForContainer(a, "sidecar"); ok {
		t.Fatalf("sidecar tagged: %v", s)
	}
	if _, ok := ForContainer(a, "worker"); !ok {
		t.Fatal("worker not tagged")
	}
	if _, ok := ForContainer(map[string]string{"app": "x"}, "worker"); ok {
		t.Fatal("a pod without the prefix asks for nothing")
	}
}

func TestOffLeavesAContainerUntagged(t *testing.T) {
	a := map[string]string{"chameleon.scx/level": "1", "chameleon.scx/level.container.sidecar": "off"}
	if s, ok := ForContainer(a, "sidecar"); ok {
		t.Fatalf("sidecar tagged: %v", s)
	}
	if _, ok := ForContainer(a, "worker"); !ok {
		t.Fatal("worker not tagged")
	}
}

func TestUnknownKeysAndBadValuesArePassedOnForTheAgentToRefuse(t *testing.T) {
	a := map[string]string{"chameleon.scx/level": "seven", "chameleon.scx/colour": "red"}
	s, ok := ForContainer(a, "c")
	if !ok || s.String() != "colour=red,level=seven" {
		t.Fatalf("got %q %v", s.String(), ok)
	}
}
