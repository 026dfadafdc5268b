/* A program built against an installed hbdlab (pkg-config or find_package). */
#include <hbdlab/hbdlab.h>
#include <stdio.h>

int main(void)
{
    printf("consumer ok %s\n", hl_version());
    return 0;
}
