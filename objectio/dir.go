package objectio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// Dir is a Store over a local directory: the embedded default behind
// `sluice serve`. Each object is a regular file at root/<key>.
//
// It is crash-safe: an object is written to a temp file in the staging area
// root/.tmp, fsynced, and only then given its final name (rename(2), or
// link(2) for an if-absent Put), after which the parent directory is
// fsynced. A crash at any point leaves either no object or the whole object,
// never a prefix. Temp files are never listed, and NewDir removes the ones
// crashed writers left (see dir_tmp.go).
//
// Several Dir values, in one process or several, may share a root: link(2)
// fails with EEXIST for all but one creator, which is what makes if-absent
// Put safe across processes without any lock.
//
// Unlike S3, a file system cannot hold both an object "a" and an object
// "a/b". Such a Put fails with an error that is not ErrExists. Delete removes
// directories it leaves empty, so after "a/b" is deleted "a" can be created.
type Dir struct {
	root    string      // absolute and clean
	staging *stagingDir // this Dir's own directory under root/.tmp
	closed  atomic.Bool // set by Close; Put fails afterwards
}

var _ Store = (*Dir)(nil)

const (
	dirPerm = 0o755
	// putAttemptMax bounds how often Put starts over when its parent
	// directory vanished under it (a concurrent Delete pruned it). Each
	// attempt loses only to such a rare race, so running out means
	// something else is removing directories.
	putAttemptMax = 16
)

// errRetry is internal: the Put attempt raced a cleanup and must start over.
var errRetry = errors.New("objectio: retry put")

// NewDir opens the directory store at root, creating root if needed, and
// removes temp files that writers which no longer run left in root/.tmp.
// Writers that are still running, in this process or another, keep theirs.
func NewDir(root string) (*Dir, error) {
	if root == "" {
		return nil, errors.New("objectio: dir store needs a root path")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("objectio: dir store root %q: %w", root, err)
	}
	tmp := filepath.Join(abs, tmpDirName)
	if err := os.MkdirAll(tmp, dirPerm); err != nil {
		return nil, fmt.Errorf("objectio: dir store: %w", err)
	}
	if err := clearStaleStaging(tmp); err != nil {
		return nil, fmt.Errorf("objectio: dir store: clearing temp files: %w", err)
	}
	staging, err := claimStaging(tmp)
	if err != nil {
		return nil, fmt.Errorf("objectio: dir store: %w", err)
	}
	if err := syncDir(abs); err != nil {
		staging.release()
		return nil, fmt.Errorf("objectio: dir store: %w", err)
	}
	return &Dir{root: abs, staging: staging}, nil
}

// Root returns the absolute directory the store lives in.
func (d *Dir) Root() string { return d.root }

// Close releases the Dir's staging directory. Objects are unaffected. Put
// fails afterwards; Get, List and Delete keep working. A Dir that is never closed releases it
// when the process exits (or when the Dir is garbage-collected), and the
// next NewDir on the root removes what is left.
func (d *Dir) Close() error {
	d.closed.Store(true)
	return d.staging.release()
}

// path maps a validated key to its file.
func (d *Dir) path(key string) string {
	return filepath.Join(d.root, filepath.FromSlash(key))
}

// ReleasesData says the caller may reuse a Put's bytes once it returns:
// they are written to a file before it does.
func (d *Dir) ReleasesData() bool { return true }

// Put implements Store.
func (d *Dir) Put(ctx context.Context, key string, data []byte, opt PutOptions) error {
	if err := validateKey(key); err != nil {
		return err
	}
	for range putAttemptMax {
		if err := ctx.Err(); err != nil {
			return err
		}
		tmp, err := d.writeTemp(data)
		if err != nil {
			return err
		}
		err = d.install(tmp, key, opt.IfAbsent)
		// After link(2) the temp is a second name for the object; after
		// rename(2) it is already gone. Either way it must not linger.
		if rmErr := os.Remove(tmp); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("objectio: put %q: removing temp file: %w", key, rmErr)
		}
		if !errors.Is(err, errRetry) {
			return err
		}
	}
	return fmt.Errorf("objectio: put %q: gave up after %d attempts; temp files or directories kept vanishing", key, putAttemptMax)
}

// writeTemp writes data to a new file in the staging directory and fsyncs
// it, so the bytes are durable before any name makes them visible.
func (d *Dir) writeTemp(data []byte) (path string, err error) {
	if d.closed.Load() {
		return "", errors.New("objectio: put on a closed dir store")
	}
	f, err := os.CreateTemp(d.staging.path, "put-*")
	if errors.Is(err, fs.ErrNotExist) {
		// Someone removed our staging directory (by hand, or NewDir on a
		// platform without flock). Recreate it rather than fail forever.
		if err = os.MkdirAll(d.staging.path, dirPerm); err == nil {
			f, err = os.CreateTemp(d.staging.path, "put-*")
		}
	}
	if err != nil {
		return "", fmt.Errorf("objectio: put: creating temp file: %w", err)
	}
	path = f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("objectio: put: writing temp file: %w", err)
	}
	return path, nil
}

// install gives the fsynced temp file its final name and makes the name
// durable. It returns errRetry when the temp file or the parent directory
// disappeared under it.
func (d *Dir) install(tmp, key string, ifAbsent bool) error {
	final := d.path(key)
	parent := filepath.Dir(final)
	if err := d.mkdirAll(parent); err != nil {
		return d.installError(key, err)
	}
	var err error
	if ifAbsent {
		// link(2) fails with EEXIST if any file has the name, atomically,
		// even against other processes: exactly one creator wins.
		err = os.Link(tmp, final)
	} else {
		// rename(2) replaces the name atomically: readers that opened the
		// old file keep reading it whole, later opens get the new one.
		err = os.Rename(tmp, final)
	}
	if err != nil {
		return d.installError(key, err)
	}
	// The new name is in the parent's directory entries; fsync them so the
	// object survives a power loss once Put has returned. If the directory
	// is already gone, a concurrent Delete removed our object: Put happened
	// before it, which is a valid order.
	if err := syncDir(parent); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objectio: put %q: %w", key, err)
	}
	return nil
}

// installError maps a failed mkdir, link or rename to Put's result.
func (d *Dir) installError(key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A Delete pruned the parent directory after we made it. (Our
		// temp file cannot vanish: the staging lock keeps NewDir away.)
		return errRetry
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
		return d.conflict(key)
	case errors.Is(err, fs.ErrExist):
		// Only link reports EEXIST for the final name. If that name is a
		// directory, no object has the key, so "exists" would be a lie.
		if fi, statErr := os.Lstat(d.path(key)); statErr == nil && fi.IsDir() {
			return d.conflict(key)
		}
		return exists(key)
	}
	return fmt.Errorf("objectio: put %q: %w", key, err)
}

func (d *Dir) conflict(key string) error {
	return fmt.Errorf("objectio: put %q: the dir store cannot hold this key next to an existing key it is a prefix of, or that is a prefix of it (\"a\" and \"a/b\")", key)
}

// mkdirAll creates dir and its missing parents under root, fsyncing each
// parent that gained an entry: a directory whose own name is not durable
// would take the objects in it away after a crash.
func (d *Dir) mkdirAll(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) || dir == d.root {
		return err
	}
	parent := filepath.Dir(dir)
	if err := d.mkdirAll(parent); err != nil {
		return err
	}
	// EEXIST: another writer made it first; it fsyncs the parent, but we
	// cannot know it has finished, so we fsync too.
	if err := os.Mkdir(dir, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// Get implements Store. It opens the file once, so a concurrent overwrite
// (rename) cannot mix two versions: the open file is one version.
func (d *Dir) Get(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	return d.get(ctx, key, offset, length, nil)
}

// GetInto reads the whole object into buf when it fits (see
// objectio.GetInto).
func (d *Dir) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	return d.get(ctx, key, 0, -1, buf)
}

// get reads a range of an object into buf's memory when it fits.
func (d *Dir) get(ctx context.Context, key string, offset, length int64, buf []byte) ([]byte, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(d.path(key))
	if err != nil {
		if isMissing(err) {
			return nil, notFound(key)
		}
		return nil, fmt.Errorf("objectio: get %q: %w", key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("objectio: get %q: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		// A directory is a key prefix, not an object.
		return nil, notFound(key)
	}
	start, n, err := clipRange(fi.Size(), offset, length)
	if err != nil {
		return nil, err
	}
	return readAt(f, key, start, n, buf)
}

// readAt reads n bytes at start into buf's memory if it has room, else
// into fresh memory.
func readAt(f *os.File, key string, start, n int64, buf []byte) ([]byte, error) {
	buf = into(buf, n)
	got, err := f.ReadAt(buf, start)
	// ReadAt may report io.EOF together with a full read at the end.
	if got == len(buf) {
		return buf, nil
	}
	if err == io.EOF {
		// Files are replaced, never truncated in place, so a short read
		// means something outside sluice changed the file.
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("objectio: get %q: read %d of %d bytes at %d: %w", key, got, n, start, err)
}

// Delete implements Store. It also removes the parent directories the
// deletion left empty, so the tree does not fill with empty directories
// under GC and so a later key may reuse the name as an object.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	path := d.path(key)
	// unlink(2), not os.Remove: os.Remove would also rmdir an empty
	// directory, deleting a prefix that is not an object.
	if err := syscall.Unlink(path); err != nil {
		if isMissing(err) {
			return nil
		}
		if fi, statErr := os.Lstat(path); statErr == nil && fi.IsDir() {
			return nil // a prefix, not an object: nothing to delete
		}
		return fmt.Errorf("objectio: delete %q: %w", key, err)
	}
	parent := filepath.Dir(path)
	if err := syncDir(parent); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objectio: delete %q: %w", key, err)
	}
	d.pruneEmptyDirs(parent)
	return nil
}

// pruneEmptyDirs removes dir and its ancestors below root while they are
// empty. rmdir(2) refuses a non-empty directory atomically, so this cannot
// remove anything a concurrent Put just created; a Put that made a
// directory we then remove sees ENOENT on link and starts over.
func (d *Dir) pruneEmptyDirs(dir string) {
	for dir != d.root && len(dir) > len(d.root) {
		if err := syscall.Rmdir(dir); err != nil {
			return
		}
		// Best effort: a lost rmdir after a crash leaves an empty
		// directory, which lists nothing.
		_ = syncDir(filepath.Dir(dir))
		dir = filepath.Dir(dir)
	}
}

// isMissing reports whether err means no file has the path, including a
// path whose parent is a file (ENOTDIR), which is also "no such object".
func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// syncDir fsyncs a directory so that entries added or removed in it survive
// a crash. File systems that cannot fsync a directory (EINVAL, ENOTSUP)
// give no stronger guarantee to have, so that is not an error.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	closeErr := f.Close()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return closeErr
}
