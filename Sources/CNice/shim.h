#include <nice/agent.h>
