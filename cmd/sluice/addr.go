package main

import (
	"net"
	"strconv"
)

func splitHostPort(hp string) (string, int32, error) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, err
	}
	return host, int32(p), nil
}
