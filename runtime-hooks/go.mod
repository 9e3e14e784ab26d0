module tdf-oci-hook

go 1.26.8

require tdfctl v0.0.0

require github.com/opencontainers/runtime-spec v1.2.1

replace tdfctl => ../tools
