package main

import (
	"io"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// newLogger returns a JSON logger writing one object per line to w.
func newLogger(w io.Writer, verbosity int) logr.Logger {
	var mu sync.Mutex
	return funcr.NewJSON(func(obj string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = io.WriteString(w, obj+"\n")
	}, funcr.Options{LogTimestamp: true, Verbosity: verbosity}).WithName("summa-server")
}
