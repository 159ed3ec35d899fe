module github.com/airlock-sandbox/airlock

go 1.26.0

require (
	github.com/containerd/cgroups/v3 v3.1.3
	github.com/landlock-lsm/go-landlock v0.11.0
	github.com/moby/profiles/seccomp v0.2.3
	github.com/opencontainers/runc v1.5.2
	github.com/opencontainers/runtime-spec v1.3.0
	github.com/seccomp/libseccomp-golang v0.12.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.49.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/moby/sys/userns v0.2.1 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.77 // indirect
)
