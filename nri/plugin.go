package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/containerd/nri/pkg/api"
)

// Plugin turns the runtime's pod and container events into the agent's
// tag requests. No handler ever fails or waits: an error from an NRI
// plugin fails the pod, and a tag is never worth that. Every handler only
// records the wish (Agent.Want) and returns.
type Plugin struct {
	agent      *Agent
	cgroupRoot string
	log        *slog.Logger
}

func who(pod *api.PodSandbox, ctr *api.Container) string {
	return "pod " + pod.GetNamespace() + "/" + pod.GetName() + " container " + ctr.GetName()
}

// tag asks for ctr's tag if its pod's annotations want one.
func (p *Plugin) tag(pod *api.PodSandbox, ctr *api.Container, event string) {
	set, ok := ForContainer(pod.GetAnnotations(), ctr.GetName())
	if !ok {
		return
	}
	dir, err := CgroupDir(p.cgroupRoot, ctr.GetLinux().GetCgroupsPath())
	if err != nil {
		p.log.Warn("no cgroup to tag; the container runs untagged", "who", who(pod, ctr), "event", event, "err", err)
		return
	}
	if _, err := os.Stat(dir); err != nil {
		// containerd makes the cgroup when it creates the task, after
		// PostCreateContainer: the start asks again.
		if event == "post-create" {
			p.log.Debug("no cgroup yet", "who", who(pod, ctr), "cgroup", dir)
		} else {
			p.log.Warn("no cgroup to tag; the container runs untagged", "who", who(pod, ctr), "event", event, "cgroup", dir)
		}
		return
	}
	p.agent.Want(ctr.GetId(), job{cgroup: dir, set: set, who: who(pod, ctr)})
}

// untag asks for ctr's tag to go, if its pod's annotations gave it one.
func (p *Plugin) untag(pod *api.PodSandbox, ctr *api.Container) {
	if _, ok := ForContainer(pod.GetAnnotations(), ctr.GetName()); !ok {
		return
	}
	dir, err := CgroupDir(p.cgroupRoot, ctr.GetLinux().GetCgroupsPath())
	if err != nil {
		return
	}
	p.agent.Want(ctr.GetId(), job{cgroup: dir, who: who(pod, ctr)})
}

// Synchronize: at (re)registration, every container that runs already is
// tagged as its annotations say (the same tag again is harmless).
func (p *Plugin) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	byID := make(map[string]*api.PodSandbox, len(pods))
	for _, pod := range pods {
		byID[pod.GetId()] = pod
	}
	n := 0
	for _, ctr := range ctrs {
		pod := byID[ctr.GetPodSandboxId()]
		if pod == nil || ctr.GetState() != api.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if _, ok := ForContainer(pod.GetAnnotations(), ctr.GetName()); ok {
			p.tag(pod, ctr, "synchronize")
			n++
		}
	}
	p.log.Info("synchronized", "pods", len(pods), "containers", len(ctrs), "tagged", n)
	return nil, nil
}

// RunPodSandbox: the pod's annotations are read when its containers come;
// this only says in the log that a pod asks.
func (p *Plugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	for k, v := range pod.GetAnnotations() {
		if len(k) > len(Prefix) && k[:len(Prefix)] == Prefix {
			p.log.Debug("pod asks", "pod", pod.GetNamespace()+"/"+pod.GetName(), "key", k, "value", v)
		}
	}
	return nil
}

// CreateContainer: nothing is adjusted; the cgroup does not exist yet.
func (p *Plugin) CreateContainer(_ context.Context, _ *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

// PostCreateContainer: where the runtime has made the cgroup by now (CRI-O),
// no process runs in it yet, so a tag stored now is in force from the
// container's first instruction. (containerd makes it later, with the task.)
func (p *Plugin) PostCreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.tag(pod, ctr, "post-create")
	return nil
}

// StartContainer: the task exists, its process has not run yet; asked
// again where PostCreateContainer had no cgroup (a tag already answered for
// is not asked twice: Agent.Want).
func (p *Plugin) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.tag(pod, ctr, "start")
	return nil
}

// UpdateContainer: resources changed (a new cpuset, say); the tag stays,
// and the scheduler follows the affinity the kernel gives the tasks.
func (p *Plugin) UpdateContainer(_ context.Context, _ *api.PodSandbox, _ *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

// StopContainer: its tasks are gone or going; the tag goes now, so no
// requester outlives them.
func (p *Plugin) StopContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	p.untag(pod, ctr)
	return nil, nil
}

// RemoveContainer: untagged again in case the stop was missed (a plugin
// restarted in between); a cgroup already gone has no tag.
func (p *Plugin) RemoveContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.untag(pod, ctr)
	return nil
}
