# Sourced. oci_archive ROOTFS NAME EPOCH CONFIG_JSON OUT: the directory ROOTFS
# as a one-layer OCI image named NAME, written as an OCI archive (a tar of
# an OCI image layout) at OUT, which `ctr -n k8s.io images import` and
# `podman load` take as it is: index.json names the image
# (io.containerd.image.name and org.opencontainers.image.ref.name).
# CONFIG_JSON is the image config's "config" object ({"Cmd":[...],...}).
# Reproducible: the layer is sorted, owned by root, and every time in it
# and in the layout is EPOCH. Needs GNU tar, gzip and sha256sum; ROOTFS's
# times are changed to EPOCH.
oci_archive() {
	local st=$1 name=$2 epoch=$3 config=$4 out=$5 work layout created diff_id
	local layer_d layer_s config_d config_s manifest_d manifest_s
	work=$(mktemp -d "${TMPDIR:-/tmp}/oci.XXXXXX")
	layout=$work/layout
	mkdir -p "$layout/blobs/sha256"
	find "$st" -exec touch -h -d "@$epoch" {} +
	tar -C "$st" --sort=name --owner=0 --group=0 --numeric-owner --format=posix \
		--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
		--mtime="@$epoch" -cf "$work/layer.tar" .
	diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
	gzip -n -9 "$work/layer.tar"
	# blob FILE: FILE moved into the layout under its digest; "DIGEST SIZE".
	_oci_blob() {
		local d s
		d=$(sha256sum "$1" | cut -d' ' -f1)
		s=$(stat -c %s "$1")
		mv "$1" "$layout/blobs/sha256/$d"
		echo "$d $s"
	}
	read -r layer_d layer_s < <(_oci_blob "$work/layer.tar.gz")
	created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
	printf '%s' '{"created":"'"$created"'","architecture":"amd64","os":"linux",'\
'"config":'"$config"','\
'"rootfs":{"type":"layers","diff_ids":["sha256:'"$diff_id"'"]},'\
'"history":[{"created":"'"$created"'","created_by":"deploy/kubernetes/oci_layout.sh"}]}' >"$work/config.json"
	read -r config_d config_s < <(_oci_blob "$work/config.json")
	printf '%s' '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",'\
'"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:'"$config_d"'","size":'"$config_s"'},'\
'"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:'"$layer_d"'","size":'"$layer_s"'}],'\
'"annotations":{"org.opencontainers.image.created":"'"$created"'"}}' >"$work/manifest.json"
	read -r manifest_d manifest_s < <(_oci_blob "$work/manifest.json")
	printf '%s' '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json",'\
'"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:'"$manifest_d"'","size":'"$manifest_s"','\
'"platform":{"architecture":"amd64","os":"linux"},'\
'"annotations":{"io.containerd.image.name":"'"$name"'","org.opencontainers.image.ref.name":"'"$name"'"}}]}' >"$layout/index.json"
	printf '%s' '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
	find "$layout" -exec touch -h -d "@$epoch" {} +
	tar -C "$layout" --sort=name --owner=0 --group=0 --numeric-owner --format=posix \
		--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
		-cf "$out" oci-layout index.json blobs
	echo "$name: layer sha256:$layer_d ($((layer_s / 1024)) KiB compressed), manifest sha256:$manifest_d" >&2
	rm -rf "$work"
}
