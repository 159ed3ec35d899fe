package compat_test

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// This file is the suite's one table: the CPython modules it runs, and
// every case allowed to differ inside, under its cause. Each cause has a
// check that it still holds (TestCauses); each listed case must still
// differ inside (judge), or the suite fails until it is removed.

// module is a CPython test module run by python3 -m test.
type module struct {
	Name string
	// Full: run only in the full set (AIRLOCK_COMPAT=full).
	Full bool
	// Args are extra regrtest arguments, for both runs alike; Why says
	// why.
	Args []string
	Why  string
	// Budget is the time a run may take (regrtest's --timeout and the
	// sandbox's). 0 = 5 minutes.
	Budget time.Duration
}

func (m module) budget() time.Duration {
	if m.Budget == 0 {
		return 5 * time.Minute
	}
	return m.Budget
}

// caseBudget is the time one case may take (regrtest's --timeout: it
// dumps the stacks and ends the run): a case that hangs ends its run in 2
// minutes, not at the run's budget, and its run's remaining cases are
// run again (judge). No case of the table takes more than about 30 s
// here, even under CI's load.
func (m module) caseBudget() time.Duration { return min(m.budget(), 2*time.Minute) }

var modules = []module{
	{Name: "test_os"},
	{Name: "test_posix"},
	{Name: "test_pty"},
	{Name: "test_subprocess"},
	{Name: "test_tarfile"},
	{Name: "test_signal"},
	{Name: "test_socket", Args: []string{"--ignore", "*VSOCK*"},
		Why: "the VSOCK cases hang bare on a VM with a vsock device (they connect to the host's CID); inside there is no /dev/vsock and they skip"},
	{Name: "test_threading"},
	{Name: "test_tempfile"},
	{Name: "test_shutil"},
	{Name: "test_mmap"},
	{Name: "test_select"},
	{Name: "test_selectors"},
	{Name: "test_faulthandler"},
	{Name: "test_ctypes"},
	{Name: "test_multiprocessing_forkserver", Full: true, Budget: 10 * time.Minute},
	{Name: "test_asyncio", Full: true, Budget: 10 * time.Minute},
	{Name: "test_resource"},
}

// kind is the kind of a cause.
type kind string

const (
	// design: a limit on purpose (no network, the file size limit, no
	// real root). Its check shows the limit inside.
	design kind = "design"
	// open: a fidelity gap being fixed under issue 16. Its check shows
	// the gap inside; its cases must still fail inside.
	open kind = "open"
)

// cause is why some cases differ inside.
type cause struct {
	Name  string
	Kind  kind
	Why   string
	Check func(t *testing.T) // fails when the cause no longer holds inside
	Cases []exception
}

// exception is one case (a case id, a class id followed by ".*", or a
// tool step "tool.NAME.STEP") allowed to be worse inside, in the given
// passes.
type exception struct {
	Case  string
	Mode  mode
	cause *cause
}

func (e *exception) matches(id string) bool {
	if p, ok := strings.CutSuffix(e.Case, ".*"); ok {
		return strings.HasPrefix(id, p+".")
	}
	return id == e.Case
}

var causes = []*cause{
	{
		Name: "file-size-limit", Kind: design, Check: checkFileSize,
		Why: "the default policy caps a file's size at 1 GiB (RLIMIT_FSIZE); bare has no limit",
		Cases: []exception{
			{Case: "test.test_resource.ResourceTest.test_fsize_ismax"},
			{Case: "test.test_mmap.LargeMmapTests.test_around_2GB"},
			{Case: "test.test_mmap.LargeMmapTests.test_around_4GB"},
			{Case: "test.test_mmap.LargeMmapTests.test_large_filesize"},
			{Case: "test.test_mmap.LargeMmapTests.test_large_offset"},
		},
	},
	{
		Name: "no-capabilities", Kind: design, Check: checkNoCapabilities,
		Why: "a sandboxed program holds no capability: what real root does bare (setgroups, chown to any id, trusted.* xattrs, sethostname) it cannot",
		Cases: []exception{
			{Case: "test.test_posix.PosixGroupsTester.test_initgroups", Mode: rootOnly},
			{Case: "test.test_posix.PosixGroupsTester.test_setgroups", Mode: rootOnly},
			{Case: "test.test_shutil.TestCopy.test_copy2_xattr", Mode: rootOnly},
			{Case: "test.test_shutil.TestCopy.test_copyxattr", Mode: rootOnly},
			{Case: "test.test_shutil.TestCopy.test_copyxattr_symlinks", Mode: rootOnly},
			{Case: "test.test_socket.GeneralModuleTests.test_sethostname", Mode: rootOnly},
			{Case: "tool.tar.owners", Mode: rootOnly},
			{Case: "test.test_os.ChownFileTests.test_chown_with_root", Mode: rootOnly},
		},
	},
}

// allExceptions returns every exception of the table, each linked to
// its cause.
var allExceptions = sync.OnceValue(func() []*exception {
	var out []*exception
	for _, c := range causes {
		for i := range c.Cases {
			e := &c.Cases[i]
			e.cause = c
			out = append(out, e)
		}
	}
	return out
})

// exceptionsFor returns the exceptions for cases starting with prefix
// that apply in mode m.
func exceptionsFor(prefix string, m mode) []*exception {
	var out []*exception
	for _, e := range allExceptions() {
		if strings.HasPrefix(e.Case, prefix) && (e.Mode == both || e.Mode == m) {
			out = append(out, e)
		}
	}
	return out
}

// excuse returns the exception of excs that covers id, or nil.
func excuse(excs []*exception, id string) *exception {
	for _, e := range excs {
		if e.matches(id) {
			return e
		}
	}
	return nil
}
