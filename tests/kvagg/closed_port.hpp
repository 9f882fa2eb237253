#pragma once
// A UDP port on 127.0.0.1 that nothing listens on (bound once to learn a free one, then closed):
// the kernel refuses what is sent there (ICMP port unreachable), as for a kvagg that is down.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace linerate::test {

inline uint16_t closed_port() {
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        ADD_FAILURE() << "no UDP socket on 127.0.0.1";
    ::close(fd);
    return ntohs(a.sin_port);
}

}  // namespace linerate::test
