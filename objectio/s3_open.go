package objectio

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

func init() {
	schemeOpeners["s3"] = openS3
}

// s3URLParams are the query parameters an s3:// store URL may carry.
var s3URLParams = []string{"endpoint", "region", "path_style", "access_key", "secret_key", "request_timeout", "max_attempts"}

// openS3 opens s3://bucket/prefix?endpoint=…&region=…&path_style=true&
// access_key=…&secret_key=…&request_timeout=30s&max_attempts=5; rest is the
// text after "s3://".
func openS3(rest string) (Store, error) {
	cfg, err := parseS3URL(rest)
	if err != nil {
		return nil, err
	}
	return NewS3(context.Background(), cfg)
}

// parseS3URL parses the text after "s3://". Query values are URL-decoded,
// so a secret key holding '+', '&' or '%' must be percent-encoded. Errors
// never quote the query, which may hold a secret.
func parseS3URL(rest string) (S3Config, error) {
	path, rawQuery, _ := strings.Cut(rest, "?")
	bucket, prefix, _ := strings.Cut(path, "/")
	if bucket == "" {
		return S3Config{}, fmt.Errorf("objectio: s3 store URL needs a bucket, as in s3://bucket/prefix?endpoint=http://127.0.0.1:9000&path_style=true")
	}
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return S3Config{}, fmt.Errorf("objectio: s3 store URL for bucket %q has a malformed query", bucket)
	}
	for name := range query {
		if !slices.Contains(s3URLParams, name) {
			return S3Config{}, fmt.Errorf("objectio: s3 store URL for bucket %q has unknown parameter %q; known: %s",
				bucket, name, strings.Join(s3URLParams, ", "))
		}
		if len(query[name]) > 1 {
			return S3Config{}, fmt.Errorf("objectio: s3 store URL for bucket %q repeats parameter %q", bucket, name)
		}
	}
	cfg := S3Config{
		Bucket:    bucket,
		Prefix:    prefix,
		Endpoint:  query.Get("endpoint"),
		Region:    query.Get("region"),
		AccessKey: query.Get("access_key"),
		SecretKey: query.Get("secret_key"),
		PathStyle: endpointIsLocal(query.Get("endpoint")),
	}
	if v := query.Get("path_style"); v != "" {
		if cfg.PathStyle, err = strconv.ParseBool(v); err != nil {
			return S3Config{}, fmt.Errorf("objectio: s3 store URL: path_style=%q is not a boolean", v)
		}
	}
	if v := query.Get("request_timeout"); v != "" {
		if cfg.RequestTimeout, err = time.ParseDuration(v); err != nil || cfg.RequestTimeout <= 0 {
			return S3Config{}, fmt.Errorf("objectio: s3 store URL: request_timeout=%q is not a positive duration such as 30s", v)
		}
	}
	if v := query.Get("max_attempts"); v != "" {
		if cfg.MaxAttempts, err = strconv.Atoi(v); err != nil || cfg.MaxAttempts <= 0 {
			return S3Config{}, fmt.Errorf("objectio: s3 store URL: max_attempts=%q is not a positive integer", v)
		}
	}
	return cfg, nil
}

// endpointIsLocal reports an endpoint addressed by IP literal or localhost,
// where a bucket cannot be a host name, so path-style addressing is the
// only one that works. It is the default there unless path_style says
// otherwise.
func endpointIsLocal(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	return host == "localhost" || net.ParseIP(host) != nil
}

// RedactStoreURL returns a store URL fit for logs: the values of
// secret_key and access_key are replaced. Other URLs are returned as given.
func RedactStoreURL(storeURL string) string {
	base, rawQuery, ok := strings.Cut(storeURL, "?")
	if !ok {
		return storeURL
	}
	parts := strings.Split(rawQuery, "&")
	for i, p := range parts {
		name, _, _ := strings.Cut(p, "=")
		if name == "secret_key" || name == "access_key" {
			parts[i] = name + "=REDACTED"
		}
	}
	return base + "?" + strings.Join(parts, "&")
}
