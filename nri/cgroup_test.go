package main

import "testing"

func TestCgroupDir(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/kubepods/burstable/pod1/abc", "/sys/fs/cgroup/kubepods/burstable/pod1/abc"},
		{"/kubepods/../kubepods/pod1/abc", "/sys/fs/cgroup/kubepods/pod1/abc"},
		{"kubepods-burstable-pod1.slice:cri-containerd:abc",
			"/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-abc.scope"},
		{"kubepods-pod2.slice:crio:def", "/sys/fs/cgroup/kubepods.slice/kubepods-pod2.slice/crio-def.scope"},
		{"system.slice:docker:1", "/sys/fs/cgroup/system.slice/docker-1.scope"},
	} {
		got, err := CgroupDir("/sys/fs/cgroup", c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "/", "a:b", "kubepods--x.slice:p:n", "x.slice:p:", "notaslice:p:n", "x.slice:p:../../etc"} {
		if got, err := CgroupDir("/sys/fs/cgroup", bad); err == nil {
			t.Errorf("%q: accepted as %q", bad, got)
		}
	}
}
