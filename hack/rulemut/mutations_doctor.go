package main

// doctorMutations break the rules Rxx (doctor).
var doctorMutations = []Mutation{
	{
		Rule: "R01", Desc: "the doctor saves repaired metadata only when it removed more than one segment",
		Edits: []Edit{{File: "engine/index/doctor.go",
			From: `if len(rep.RemovedSegments) > 0 {`,
			To:   `if len(rep.RemovedSegments) > 1 {`}},
		Pkg: "./engine/index", Run: "^TestR01_",
	},
	{
		Rule: "R02", Desc: "normal writer open runs the doctor first: a segment with a missing file is dropped from metadata at startup",
		Edits: []Edit{{File: "engine/index/index.go",
			From: `
				func Open(fs vfs.FS, dir string, opts Options) (*Index, error) {
					lock, err := lockDir(fs, dir)`,
			To: `
				func Open(fs vfs.FS, dir string, opts Options) (*Index, error) {
					if _, err := Doctor(context.Background(), fs, dir, opts); err != nil && !errors.Is(err, ErrNotFound) {
						return nil, err
					}
					lock, err := lockDir(fs, dir)`}},
		Pkg: "./engine/index", Run: "^TestR02_",
	},
}
