package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Protocol version of the agent's control socket (src/control.rs VERSION).
const controlVersion = 1

// request is one line to the agent: src/control.rs Op::Tag and Op::Untag.
type request struct {
	V      int               `json:"v"`
	Op     string            `json:"op"`
	Cgroup string            `json:"cgroup"`
	Set    map[string]string `json:"set,omitempty"`
	Via    string            `json:"via"`
	Who    string            `json:"who,omitempty"`
}

// response is the agent's answer (src/control.rs Response).
type response struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error"`
	Detail string `json:"detail"`
	Reason string `json:"reason"`
}

// send asks the agent once; an error means it could not be asked (no
// agent, a broken answer), a refusal comes back as a response.
func send(socket string, req request, timeout time.Duration) (response, error) {
	var r response
	conn, err := net.DialTimeout("unix", socket, timeout)
	if err != nil {
		return r, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return r, err
	}
	line, err := json.Marshal(req)
	if err != nil {
		return r, err
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return r, err
	}
	answer, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return r, fmt.Errorf("reading the agent's answer: %w", err)
	}
	if err := json.Unmarshal(answer, &r); err != nil {
		return r, fmt.Errorf("the agent's answer %q: %w", answer, err)
	}
	return r, nil
}

// job is what one container needs from the agent now: its tag (Set) or
// none (Set nil: untag).
type job struct {
	cgroup string
	set    Settings
	who    string
}

// same: asks the agent for the same thing.
func (j job) same(o job) bool {
	return j.cgroup == o.cgroup && (j.set == nil) == (o.set == nil) && j.set.String() == o.set.String()
}

// Agent hands the runtime's events to the agent's control socket on a
// goroutine of its own, so that no container's creation waits on it: a
// handler only records the latest wish per container and returns. While
// the agent cannot be reached the wishes wait and are retried; a newer
// wish for the same container replaces an older one (the latest is the
// truth), so the backlog is at most one per live container.
type Agent struct {
	socket  string
	timeout time.Duration
	retry   time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	pending map[string]job // container id → latest wish
	order   []string       // ids in arrival order (each once)
	settled map[string]job // container id → the tag the agent answered for (taken or refused)
	wake    chan struct{}
}

func NewAgent(socket string, log *slog.Logger) *Agent {
	return &Agent{
		socket:  socket,
		timeout: 2 * time.Second,
		retry:   time.Second,
		log:     log,
		pending: map[string]job{},
		settled: map[string]job{},
		wake:    make(chan struct{}, 1),
	}
}

// Want records what container id needs; it never blocks. A tag the agent
// already answered for (the runtime reports a container's creation and its
// start: both ask) is not asked again, so a refusal is logged and counted
// once.
func (a *Agent) Want(id string, j job) {
	a.mu.Lock()
	if s, ok := a.settled[id]; ok && s.same(j) {
		if _, queued := a.pending[id]; !queued {
			a.mu.Unlock()
			return
		}
	}
	if _, queued := a.pending[id]; !queued {
		a.order = append(a.order, id)
	}
	a.pending[id] = j
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *Agent) next() (string, job, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.order) > 0 {
		id := a.order[0]
		a.order = a.order[1:]
		if j, ok := a.pending[id]; ok {
			delete(a.pending, id)
			return id, j, true
		}
	}
	return "", job{}, false
}

// requeue puts back a wish that could not be delivered, unless a newer
// one came meanwhile.
func (a *Agent) requeue(id string, j job) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, newer := a.pending[id]; !newer {
		a.pending[id] = j
		a.order = append(a.order, id)
	}
}

// settle records the agent's answer for id: a tag is remembered, an untag
// forgets the container (its next wish is asked whatever it is).
func (a *Agent) settle(id string, j job) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if j.set == nil {
		delete(a.settled, id)
	} else {
		a.settled[id] = j
	}
}

// Run delivers wishes until stop is closed.
func (a *Agent) Run(stop <-chan struct{}) {
	for {
		id, j, ok := a.next()
		if !ok {
			select {
			case <-stop:
				return
			case <-a.wake:
			}
			continue
		}
		if a.deliver(j) {
			a.settle(id, j)
		} else {
			a.requeue(id, j)
			select {
			case <-stop:
				return
			case <-time.After(a.retry):
			}
		}
	}
}

// deliver asks the agent for one wish; false: ask again later.
func (a *Agent) deliver(j job) bool {
	req := request{V: controlVersion, Op: "untag", Cgroup: j.cgroup, Via: "nri", Who: j.who}
	if j.set != nil {
		req.Op, req.Set = "tag", j.set
	}
	r, err := send(a.socket, req, a.timeout)
	switch {
	case err != nil:
		a.log.Warn("the agent cannot be reached; will retry", "socket", a.socket, "op", req.Op, "who", j.who, "err", err)
		return false
	case r.OK && j.set != nil:
		a.log.Info("tagged", "who", j.who, "cgroup", j.cgroup, "tag", j.set.String())
	case r.OK:
		a.log.Info("untagged", "who", j.who, "cgroup", j.cgroup, "detail", r.Detail)
	case r.Reason != "":
		// Refused (a bad value, a cgroup gone): the container runs
		// untagged; the agent counts it (chameleon_nri_rejected_total).
		a.log.Warn("tag refused; the container runs untagged", "who", j.who, "reason", r.Reason, "err", r.Error, "tag", j.set.String())
	default:
		// The agent is stopping or did not answer in time: ask again.
		a.log.Warn("the agent did not take the request; will retry", "who", j.who, "op", req.Op, "err", r.Error)
		return false
	}
	return true
}
