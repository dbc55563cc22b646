// Command kubectl-summa is the `kubectl summa` plugin (install it on PATH,
// or with Krew: plugins/krew/summa.yaml): status, restart, doctor, suspend,
// resume, report, backup and restore for SummaIndex resources. See
// internal/kubectlsumma.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/summadev/summa/internal/kubectlsumma"
)

func main() {
	cmd := kubectlsumma.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
