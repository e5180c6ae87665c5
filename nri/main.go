// scx_chameleon-nri: the container runtime's NRI plugin for scx_chameleon.
//
// A pod asks for an execution object by annotation (annotations.go); the
// plugin finds each of its containers' cgroups as the runtime creates them
// and asks the agent, over its control socket, to tag them (agent.go). The
// tag is stored on the cgroup: the plugin, the agent and the runtime may
// each restart without losing it, and it goes with the cgroup.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/containerd/nri/pkg/stub"
)

func main() {
	nriSocket := flag.String("nri-socket", "/var/run/nri/nri.sock", "the runtime's NRI socket")
	control := flag.String("control-socket", "/run/scx_chameleon/control.sock", "the agent's control socket")
	cgroupRoot := flag.String("cgroup-root", "/sys/fs/cgroup", "where cgroup v2 is mounted")
	name := flag.String("name", "chameleon", "the plugin's name, as the runtime lists it")
	idx := flag.String("idx", "50", "the plugin's index (two digits): its place among the runtime's plugins")
	verbose := flag.Bool("verbose", false, "log every event")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [flags]\n\nTags containers whose pod is annotated %s{level,weight,tax,smt,prio}\n(%slevel.container.NAME for one container) through scx_chameleon's agent.\n\n", os.Args[0], Prefix, Prefix)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected argument %q\n", os.Args[0], flag.Arg(0))
		os.Exit(2)
	}
	if len(*idx) != 2 || (*idx)[0] < '0' || (*idx)[0] > '9' || (*idx)[1] < '0' || (*idx)[1] > '9' {
		fmt.Fprintf(os.Stderr, "%s: --idx %q: expected two digits\n", os.Args[0], *idx)
		os.Exit(2)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	agent := NewAgent(*control, log)
	go agent.Run(ctx.Done())
	p := &Plugin{agent: agent, cgroupRoot: *cgroupRoot, log: log}

	// The runtime may restart, or not be up yet: register again until
	// stopped. Each registration begins with Synchronize.
	for backoff := time.Second; ; {
		s, err := stub.New(p, stub.WithPluginName(*name), stub.WithPluginIdx(*idx), stub.WithSocketPath(*nriSocket))
		if err != nil {
			log.Error("cannot create the NRI stub", "err", err)
			os.Exit(1)
		}
		start := time.Now()
		err = s.Run(ctx)
		if ctx.Err() != nil {
			log.Info("stopping")
			return
		}
		if time.Since(start) > time.Minute {
			backoff = time.Second
		}
		log.Warn("the runtime's connection ended; registering again", "socket", *nriSocket, "in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}
