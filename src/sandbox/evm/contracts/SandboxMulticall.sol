// SPDX-License-Identifier: MIT
//
// Multicall3's tryAggregate, and only it, for the sandbox's EVM ledger: @x402/evm reads a
// token's balance, name, version and authorizationState through Multicall3 at its canonical
// address to explain a failed verification, and a fresh anvil chain has no Multicall3.
// Written for this project; placed at 0xcA11bde05977b3631167028862bE2a173976CA11 with
// anvil_setCode. It keeps no storage.
pragma solidity 0.6.12;
pragma experimental ABIEncoderV2;

contract SandboxMulticall {
    struct Call {
        address target;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    function tryAggregate(bool requireSuccess, Call[] calldata calls) external payable returns (Result[] memory results) {
        results = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory returnData) = calls[i].target.call(calls[i].callData);
            if (requireSuccess) require(success, "Multicall3: call failed");
            results[i] = Result(success, returnData);
        }
    }
}
