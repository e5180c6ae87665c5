package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// fakeAgent answers each request with answer(req) and reports it on got.
func fakeAgent(t *testing.T, path string, answer func(request) response) chan request {
	got := make(chan request, 16)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadBytes('\n')
			var r request
			_ = json.Unmarshal(line, &r)
			out, _ := json.Marshal(answer(r))
			c.Write(append(out, '\n'))
			c.Close()
			got <- r
		}
	}()
	return got
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestAWishWaitsForTheAgentAndTheLatestWins(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "control.sock")
	a := NewAgent(sock, quiet())
	a.retry = 20 * time.Millisecond
	stop := make(chan struct{})
	defer close(stop)
	go a.Run(stop)
	// No agent yet: the wishes wait; the second for c1 replaces the first.
	a.Want("c1", job{cgroup: "/cg/1", set: Settings{"level": "1"}, who: "w1"})
	a.Want("c1", job{cgroup: "/cg/1", set: Settings{"level": "2"}, who: "w1"})
	a.Want("c2", job{cgroup: "/cg/2", who: "w2"})
	time.Sleep(100 * time.Millisecond)
	got := fakeAgent(t, sock, func(request) response { return response{OK: true} })
	seen := map[string]request{}
	for len(seen) < 2 {
		select {
		case r := <-got:
			seen[r.Cgroup] = r
		case <-time.After(5 * time.Second):
			t.Fatalf("delivered only %v", seen)
		}
	}
	if r := seen["/cg/1"]; r.Op != "tag" || r.Set["level"] != "2" || r.Via != "nri" || r.V != 1 {
		t.Fatalf("c1: %+v", r)
	}
	if r := seen["/cg/2"]; r.Op != "untag" || r.Set != nil {
		t.Fatalf("c2: %+v", r)
	}
	select {
	case r := <-got:
		t.Fatalf("delivered twice: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestARefusalIsFinalButAStoppingAgentIsAskedAgain(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "control.sock")
	n := 0
	got := fakeAgent(t, sock, func(r request) response {
		n++
		if r.Cgroup == "/cg/bad" {
			return response{Error: "level \"9\"", Reason: "level"}
		}
		if n < 3 {
			return response{Error: "the agent is stopping"}
		}
		return response{OK: true}
	})
	a := NewAgent(sock, quiet())
	a.retry = 10 * time.Millisecond
	stop := make(chan struct{})
	defer close(stop)
	go a.Run(stop)
	a.Want("bad", job{cgroup: "/cg/bad", set: Settings{"level": "9"}})
	if r := <-got; r.Cgroup != "/cg/bad" {
		t.Fatalf("%+v", r)
	}
	a.Want("ok", job{cgroup: "/cg/ok", set: Settings{"level": "1"}})
	for i := 0; i < 2; i++ {
		if r := <-got; r.Cgroup != "/cg/ok" {
			t.Fatalf("the refused request was asked again: %+v", r)
		}
	}
	select {
	case r := <-got:
		t.Fatalf("asked after success: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestWantNeverBlocks(t *testing.T) {
	a := NewAgent("/nonexistent/control.sock", quiet())
	done := make(chan struct{})
	go func() {
		for i := 0; i < 10000; i++ {
			a.Want("c", job{cgroup: "/cg", set: Settings{"level": "1"}})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Want blocked with nobody delivering")
	}
	if len(a.pending) != 1 || len(a.order) != 1 {
		t.Fatalf("backlog %d/%d: one per container", len(a.pending), len(a.order))
	}
}

func TestATagAnsweredIsNotAskedAgainUntilUntagged(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "control.sock")
	got := fakeAgent(t, sock, func(request) response { return response{Error: "bad", Reason: "level"} })
	a := NewAgent(sock, quiet())
	stop := make(chan struct{})
	defer close(stop)
	go a.Run(stop)
	bad := job{cgroup: "/cg/c", set: Settings{"level": "7"}}
	a.Want("c", bad)
	<-got
	time.Sleep(50 * time.Millisecond)
	a.Want("c", bad) // the start, after the creation
	select {
	case r := <-got:
		t.Fatalf("asked again: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	a.Want("c", job{cgroup: "/cg/c"})
	if r := <-got; r.Op != "untag" {
		t.Fatalf("%+v", r)
	}
	time.Sleep(50 * time.Millisecond)
	a.Want("c", bad) // a new container of the same id after removal
	if r := <-got; r.Op != "tag" {
		t.Fatalf("%+v", r)
	}
}
