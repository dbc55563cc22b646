package main

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/replication"
	"github.com/summadev/summa/engine/server"
)

// follower runs the replication loop of a read follower (--follow); its
// zero value (a leader) does nothing.
type follower struct {
	f      *replication.Follower
	cancel context.CancelFunc
	done   chan struct{}
}

// startFollower builds the follower of cfg.Follow.Leader over reg (nothing
// for a leader).
func startFollower(cfg Config, log logr.Logger, reg *registry.Registry) (*follower, error) {
	if cfg.Follow.Leader == "" {
		return &follower{}, nil
	}
	f, err := replication.New(replication.Config{Leader: cfg.Follow.Leader, TokenFile: cfg.Follow.TokenFile,
		CAFile: cfg.Follow.CAFile, ServerName: cfg.Follow.ServerName, Logger: log.WithName("follower")}, reg)
	if err != nil {
		return nil, err
	}
	return &follower{f: f}, nil
}

// server is the follower as the HTTP server sees it (nil for a leader).
func (fo *follower) server() server.Follower {
	if fo.f == nil {
		return nil
	}
	return fo.f
}

// run starts the replication loop.
func (fo *follower) run() {
	if fo.f == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	fo.cancel, fo.done = cancel, make(chan struct{})
	go func() { defer close(fo.done); fo.f.Run(ctx) }()
}

// stop stops the replication loop and waits for it (shutdown, before the
// registry closes).
func (fo *follower) stop() {
	if fo.cancel == nil {
		return
	}
	fo.cancel()
	<-fo.done
}
