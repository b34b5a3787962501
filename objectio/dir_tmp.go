package objectio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// The staging area root/.tmp holds one directory per live Dir value, and
// each Dir writes its temp files only into its own. A Dir holds an
// exclusive flock(2) on its directory for as long as it lives; the kernel
// drops the lock when the process dies, however it dies.
//
// That lets NewDir tell stale temp files from live ones. Clearing all of
// .tmp would be wrong when two processes share a root (two sequencers on
// one laptop store): the second one starting would delete the temp file the
// first is about to link, failing its Put. Instead NewDir removes only the
// directories whose lock it can take: their owner is gone, and so no one
// will ever link those files.

// stagingClaimAttemptMax bounds claimStaging's retries; each retry means a
// concurrent NewDir removed our fresh directory before we locked it.
const stagingClaimAttemptMax = 8

// stagingDir is one Dir's locked directory under root/.tmp.
type stagingDir struct {
	path string
	once sync.Once
	lock *os.File // open on path, flocked; closing it drops the lock
	err  error    // result of release
}

// claimStaging creates and locks a fresh staging directory under tmp.
//
// The interleaving it guards against: we mkdir, a concurrent NewDir
// elsewhere finds the directory unlocked, takes the lock and removes it,
// then we lock the now unlinked directory. Having locked it, we check that
// the path still names the directory we hold; if not, we start over.
func claimStaging(tmp string) (*stagingDir, error) {
	for range stagingClaimAttemptMax {
		path, err := os.MkdirTemp(tmp, "w-")
		if err != nil {
			return nil, err
		}
		f, err := os.Open(path)
		if err != nil {
			continue // removed before we could open it
		}
		locked, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking staging directory %s: %w", path, err)
		}
		if locked && samePath(f, path) {
			return &stagingDir{path: path, lock: f}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("could not claim a staging directory in %s after %d attempts", tmp, stagingClaimAttemptMax)
}

// samePath reports whether path still names the directory f has open.
func samePath(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	named, err := os.Stat(path)
	return err == nil && os.SameFile(held, named)
}

// release removes the staging directory and drops its lock. Temp files in
// it belong to Puts that have not finished; the caller promises there are
// none.
func (s *stagingDir) release() error {
	s.once.Do(func() {
		err := os.RemoveAll(s.path)
		if closeErr := s.lock.Close(); err == nil {
			err = closeErr
		}
		s.err = err
	})
	return s.err
}

// clearStaleStaging removes from tmp every staging directory whose owner is
// gone, and any loose file (Dirs never write directly into tmp).
func clearStaleStaging(tmp string) error {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, e := range entries {
		path := filepath.Join(tmp, e.Name())
		if e.IsDir() {
			err = clearIfStale(path)
		} else {
			err = os.Remove(path)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// clearIfStale removes a staging directory if no live Dir holds its lock.
// We hold the lock while removing, so a Dir that is just now claiming the
// directory fails its check in claimStaging and picks another.
func clearIfStale(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	locked, err := tryLock(f)
	if err != nil || !locked {
		return err // live (or unlockable): leave it
	}
	return os.RemoveAll(path)
}
