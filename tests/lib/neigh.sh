# Neighbour-table (ARP, NDP) times of an interface, for the tests of
# dilated-node and tdf-cni, which multiply them by the TDF (sourced).
#   neigh_times [CMD...] DEV: "table name ms" per time of DEV, as `ip ntable`
#     prints them, run under CMD (e.g. nsenter -t PID -n)
#   neigh_dilated TDF REF NODE: nothing if every time in NODE (neigh_times
#     output) is TDF (an integer) x the same time in REF; else the mismatches

neigh_times() {
	local dev=${*: -1}
	"${@:1:$#-1}" ip ntable show dev "$dev" | awk '
		/^inet/ { table = $2; next }
		{ for (i = 1; i < NF; i++)
			if ($i ~ /^(base_reachable|retrans|gc_stale|delay_probe|anycast_delay|proxy_delay|locktime)$/)
				print table, $i, $(i + 1) }'
}

neigh_dilated() {
	local tdf=$1 ref=$2 node=$3
	[ -n "$ref" ] || { echo "no reference times"; return; }
	awk -v tdf="$tdf" 'NR == FNR { want[$1 " " $2] = $3 * tdf; next }
		{ k = $1 " " $2; seen[k] = 1
		  if (!(k in want)) print k ": not in the reference"
		  else if ($3 != want[k]) print k ": " $3 ", want " want[k] }
		END { for (k in want) if (!(k in seen)) print k ": missing" }' <(printf '%s\n' "$ref") <(printf '%s\n' "$node")
}
