# C01/C03: newer syscalls against the policy, each with arguments that
# make an allowed call fail harmlessly (EBADF/EFAULT/EINVAL), plus a
# number no kernel has and x32 numbers of dangerous calls.
OUT["openat2"] = sc(437, -1, 0, 0, 0)
OUT["pidfd_getfd"] = sc(438, -1, 0, 0)
OUT["mount_setattr"] = sc(442, -1, 0, 0, 0, 0)
OUT["landlock_create_ruleset"] = sc(444, 0, 0, 0xffff)  # unknown flags
OUT["landlock_add_rule"] = sc(445, -1, 1, 0, 0)
OUT["landlock_restrict_self"] = sc(446, -1, 0)
OUT["memfd_secret"] = sc(447, 0xffff)  # unknown flags
OUT["futex_waitv"] = sc(449, 0, 0, 0xffff, 0, 0)  # unknown flags
OUT["syscall 1000"] = sc(1000)
done()
