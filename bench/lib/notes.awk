# What each row's error column is measured against, and anything else the
# reader of the table must know about a case.
{
	printf "%-14s reference: %s", $1, $18
	if ($19 != "") printf "; %s", $19
	printf "\n"
}
