package e2b

import "net/url"

// unescape undoes the SDK's two layers of a metadata filter's key or
// value: URLSearchParams' form encoding over encodeURIComponent's.
func unescape(s string) (string, error) {
	s, err := url.QueryUnescape(s)
	if err != nil {
		return "", err
	}
	return url.PathUnescape(s)
}
