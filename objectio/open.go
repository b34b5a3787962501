package objectio

import (
	"fmt"
	"strings"
)

// schemeOpeners maps a store URL scheme to its constructor, which gets the
// text after "scheme://". Backends with extra dependencies (s3) add
// themselves from their own file with an init function, so adding one does
// not touch this file and a build without them still compiles.
var schemeOpeners = map[string]func(rest string) (Store, error){
	"mem": openMem,
	"dir": openDir,
}

// Open returns the store a URL names, as given to --store:
//
//	mem://                 a fresh in-memory store (NewMem)
//	dir:///abs/path        a directory store (NewDir), created if missing
//	dir://./rel/path       the same, relative to the working directory
//	dir://rel              the same
//	s3://bucket/prefix?…   S3 (only when the s3 backend is built in)
func Open(url string) (Store, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("objectio: store URL %q has no scheme; want mem://, dir://path or s3://bucket/prefix", url)
	}
	open, ok := schemeOpeners[scheme]
	if ok {
		return open(rest)
	}
	if scheme == "s3" {
		return nil, fmt.Errorf("objectio: store URL %q: the s3 backend is not built into this binary yet; use dir:// or mem://", url)
	}
	return nil, fmt.Errorf("objectio: store URL %q has unknown scheme %q; want mem://, dir://path or s3://bucket/prefix", url, scheme)
}

func openMem(rest string) (Store, error) {
	if rest != "" {
		// mem:// has no name: two Opens never share a store, and a path
		// here suggests the caller expects otherwise.
		return nil, fmt.Errorf("objectio: mem:// takes no path, got %q", rest)
	}
	return NewMem(), nil
}

func openDir(rest string) (Store, error) {
	if rest == "" {
		return nil, fmt.Errorf("objectio: dir:// needs a path, as in dir:///var/lib/sluice or dir://./data")
	}
	return NewDir(rest)
}
