/* sbx-egress - the egress broker of one local sandbox with a network
 * policy (backends/local/local-broker.h).  Started by the create; not for users. */
#include "local-broker.h"

int main(int argc, char **argv)
{
	return local_broker_main(argc, argv);
}
