# F07: host secrets: shadow, homes, keys, credentials anywhere outside
# /proc.
for p in ("/etc/shadow", "/etc/gshadow", "/root", "/home", "/etc/ssh", "/root/.ssh", "/var/run/secrets",
          "/etc/sudoers", "/var/lib", "/run"):
    attempt(p, lambda p=p: sorted(os.listdir(p)) if os.path.isdir(p) else read(p, 64) and "READ")
if "HOSTHOME" in os.environ:
    attempt("host home", lambda: os.listdir(os.environ["HOSTHOME"]))
import re
pat = re.compile(r"^(id_(rsa|dsa|ecdsa|ed25519)|.*\.pem|.*\.key|credentials|config\.json|shadow|\.netrc|known_hosts|authorized_keys)$")
found = []
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "usr")]
    for f in files + dirs:
        if pat.match(f):
            found.append(os.path.join(root, f))
OUT["found outside /usr"] = found
done()
