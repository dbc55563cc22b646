package vectors

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/summadev/summa/bench"
)

// peerDriverSource is the Python driver (bench/vectors/peers/driver.py).
//
//go:embed peers/driver.py
var peerDriverSource []byte

// PeerPackages are the Debian packages the peer driver needs: FAISS 1.7.3,
// hnswlib 0.6.2 and numpy for Debian's python3.
var PeerPackages = []string{"python3-faiss", "python3-hnswlib", "python3-numpy"}

// PeerPython is the interpreter the driver runs on: Debian's, whose
// dist-packages hold PeerPackages.
var PeerPython = "/usr/bin/python3"

// PeersAvailable reports why the driver cannot run here ("" when python3
// imports numpy, faiss and hnswlib).
func PeersAvailable() string {
	if _, err := os.Stat(PeerPython); err != nil {
		return PeerPython + " not found"
	}
	out, err := exec.Command(PeerPython, "-c", "import numpy, faiss, hnswlib").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s cannot import numpy, faiss and hnswlib (%s)", PeerPython, strings.TrimSpace(lastLine(out)))
	}
	return ""
}

// EnsurePeers installs PeerPackages with apt-get when the driver cannot run
// and install is set; it returns why the driver still cannot run ("" when
// it can).
func EnsurePeers(install bool, log io.Writer) string {
	return bench.EnsureTools("peers", PeersAvailable, PeerPackages, install, log)
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// PeerInput is what the driver is given: the data (float vectors and
// their sign codes, queries likewise) and the parameters of both curves.
type PeerInput struct {
	// Dims is the vectors' dimension (a multiple of 8).
	Dims int
	// Vectors and Queries hold float vectors back to back.
	Vectors, Queries []float32
	// Codes and QueryCodes hold the engine's sign codes (ivf.Words(Dims)
	// words each) back to back.
	Codes, QueryCodes []uint64
	// K is the number of results per query.
	K int
	// Peers selects "faiss" and/or "hnswlib".
	Peers []string
	// Nlist, TrainIterations and TrainSamplePerList configure FAISS's
	// IndexBinaryIVF (the engine's K and training budget).
	Nlist, TrainIterations, TrainSamplePerList int
	// Rescore is the number of Hamming candidates rescored by float dot
	// product (search.RescoreFactor × K).
	Rescore int
	// Nprobes is FAISS's sweep.
	Nprobes []int
	// M and EfConstruction configure hnswlib; Efs is its sweep.
	M, EfConstruction int
	Efs               []int
	// Passes is the number of timed passes per point (each is reported).
	Passes int
}

// PeerPoint is one measured point of a peer's curve.
type PeerPoint struct {
	// Peer is "faiss" or "hnswlib"; Param the nprobe or ef.
	Peer  string
	Param int
	// Seconds is the in-process time of all queries (search and, for
	// FAISS, rescoring).
	Seconds float64
	// IDs holds K result ids per query (-1 for none).
	IDs []int32
}

// PeerResult is the driver's output.
type PeerResult struct {
	// Build is each peer's index build time in seconds.
	Build map[string]float64
	// Version is each peer's library version.
	Version map[string]string
	// Points are the measured points in the order run.
	Points []PeerPoint
}

// peerMeta is meta.json, read by the driver.
type peerMeta struct {
	N                  int      `json:"n"`
	Dims               int      `json:"dims"`
	NQ                 int      `json:"nq"`
	K                  int      `json:"k"`
	Peers              []string `json:"peers"`
	Nlist              int      `json:"nlist"`
	TrainIterations    int      `json:"train_iterations"`
	TrainSamplePerList int      `json:"train_sample_per_list"`
	Rescore            int      `json:"rescore"`
	Nprobes            []int    `json:"nprobes"`
	M                  int      `json:"hnsw_m"`
	EfConstruction     int      `json:"hnsw_ef_construction"`
	Efs                []int    `json:"efs"`
	Passes             int      `json:"passes"`
}

// peerLine is one JSON line of the driver's stdout.
type peerLine struct {
	Peer    string  `json:"peer"`
	Event   string  `json:"event"`
	Seconds float64 `json:"seconds"`
	Version string  `json:"version"`
	Param   int     `json:"param"`
	File    string  `json:"file"`
}

// RunPeers writes in to dir (numpy-readable little-endian files and
// meta.json), runs the driver once on it and reads its curves back. The
// driver's stderr goes to log.
func RunPeers(ctx context.Context, dir string, in *PeerInput, log io.Writer) (*PeerResult, error) {
	if in.Dims%8 != 0 || in.Dims <= 0 {
		return nil, fmt.Errorf("peers: %d dimensions is not a positive multiple of 8", in.Dims)
	}
	n, nq := len(in.Vectors)/in.Dims, len(in.Queries)/in.Dims
	meta := peerMeta{N: n, Dims: in.Dims, NQ: nq, K: in.K, Peers: in.Peers, Nlist: in.Nlist,
		TrainIterations: in.TrainIterations, TrainSamplePerList: in.TrainSamplePerList,
		Rescore: in.Rescore, Nprobes: in.Nprobes, M: in.M, EfConstruction: in.EfConstruction, Efs: in.Efs, Passes: max(1, in.Passes)}
	if err := writePeerFiles(dir, in, &meta); err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "driver.py")
	if err := os.WriteFile(script, peerDriverSource, 0o755); err != nil {
		return nil, fmt.Errorf("peers: %w", err)
	}
	cmd := exec.CommandContext(ctx, PeerPython, script, dir)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1")
	if log != nil {
		cmd.Stderr = log
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("peers: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("peers: starting the driver: %w", err)
	}
	res, readErr := readPeerLines(stdout, dir, nq*in.K)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("peers: the driver failed: %w", err)
	}
	if readErr != nil {
		return nil, readErr
	}
	return res, nil
}

// writePeerFiles writes meta.json and the data files of the driver.
func writePeerFiles(dir string, in *PeerInput, meta *peerMeta) error {
	words := (in.Dims + 63) / 64
	if len(in.Codes) != meta.N*words || len(in.QueryCodes) != meta.NQ*words {
		return fmt.Errorf("peers: %d code words for %d vectors and %d for %d queries of %d words", len(in.Codes), meta.N, len(in.QueryCodes), meta.NQ, words)
	}
	files := []struct {
		name string
		data any
	}{
		{"vectors.f32", in.Vectors}, {"queries.f32", in.Queries},
		{"codes.u8", codeBytes(in.Codes, words, in.Dims/8)}, {"qcodes.u8", codeBytes(in.QueryCodes, words, in.Dims/8)},
	}
	for _, f := range files {
		if err := writeLE(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), b, 0o644); err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	return nil
}

// codeBytes lays codes out as FAISS's binary codes: each code's words
// little-endian, truncated to size bytes (dims/8). Hamming distances are
// unchanged: the same bits, byte by byte.
func codeBytes(codes []uint64, words, size int) []byte {
	n := len(codes) / words
	out := make([]byte, 0, n*size)
	var buf [8]byte
	for i := 0; i < n; i++ {
		var code []byte
		for _, w := range codes[i*words : (i+1)*words] {
			binary.LittleEndian.PutUint64(buf[:], w)
			code = append(code, buf[:]...)
		}
		out = append(out, code[:size]...)
	}
	return out
}

// writeLE writes data (a slice of fixed-size numbers) little-endian.
func writeLE(path string, data any) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := binary.Write(w, binary.LittleEndian, data); err != nil {
		f.Close()
		return fmt.Errorf("peers: writing %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("peers: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("peers: writing %s: %w", path, err)
	}
	return nil
}

// readPeerLines reads the driver's JSON lines and each point's id file
// (want int32 ids).
func readPeerLines(r io.Reader, dir string, want int) (*PeerResult, error) {
	res := &PeerResult{Build: map[string]float64{}, Version: map[string]string{}}
	sc := bufio.NewScanner(r)
	done := false
	for sc.Scan() {
		var l peerLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("peers: driver line %q: %w", sc.Text(), err)
		}
		switch l.Event {
		case "build":
			res.Build[l.Peer], res.Version[l.Peer] = l.Seconds, l.Version
		case "point":
			ids, err := readIDs(filepath.Join(dir, filepath.Base(l.File)), want)
			if err != nil {
				return nil, err
			}
			res.Points = append(res.Points, PeerPoint{Peer: l.Peer, Param: l.Param, Seconds: l.Seconds, IDs: ids})
		case "done":
			done = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("peers: reading the driver: %w", err)
	}
	if !done {
		return nil, fmt.Errorf("peers: the driver stopped before it was done")
	}
	return res, nil
}

// readIDs reads want little-endian int32 ids.
func readIDs(path string, want int) ([]int32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("peers: %w", err)
	}
	if len(b) != 4*want {
		return nil, fmt.Errorf("peers: %s has %d bytes, want %d", path, len(b), 4*want)
	}
	ids := make([]int32, want)
	for i := range ids {
		ids[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return ids, nil
}
